package ptxsim

import (
	"encoding/binary"
	"fmt"
)

// red is red.global.{add,min}.u32 [a], b: an atomic update without a result (ptxgen's index
// fault counts). Atomics commute, so the order threads run in does not change the result;
// for race detection a red is a read: a word another thread of the launch stored to is a
// race, other threads' reds are not. In a partial simulation an update whose guard, address
// or value is tainted is dropped: the fault buffers then hold what the part computed from
// the inputs alone.
func (e *exec) red(t *thread, in *Inst, guardTaint bool) error {
	op, a := in.Op, in.Args
	if len(op) != 4 || op[1] != "global" || op[3] != "u32" {
		return fmt.Errorf("unsupported %s", in.Text)
	}
	if e.track && (guardTaint || t.ctrl || e.srcTaint(t, a[0]) || e.srcTaint(t, a[1])) {
		return nil
	}
	addr := e.address(t, a[0])
	b, off, err := e.d.find(addr, 4)
	if err != nil {
		return err
	}
	if err := e.globalW.check(addr, 4, e.block*e.ntid+t.tid, false); err != nil {
		return err
	}
	w := b.at(off, 4)
	old, v := binary.LittleEndian.Uint32(w), uint32(e.val(t, a[1]))
	switch op[2] {
	case "add":
		v += old
	case "min":
		v = min(v, old)
	default:
		return fmt.Errorf("unsupported %s", in.Text)
	}
	binary.LittleEndian.PutUint32(w, v)
	if e.track {
		e.ref = memRef{buf: b, off: off, n: 4}
		e.setMemTaint(false)
	}
	return nil
}
