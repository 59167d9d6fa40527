package ptxsim

import (
	"fmt"
	"sort"
)

// Device is simulated device memory: named allocations at distinct addresses. An allocation
// costs nothing until it is touched: its bytes are Go memory that the OS maps in on first
// use, and an input or a filled buffer is materialized one 4 KiB page at a time, when a
// kernel first touches the page; so a partial simulation (Part) of a launch table over a
// large batch costs what it runs, not the batch's size.
type Device struct {
	bufs []*devBuf
	next uint64
	syms map[string]uint64 // module globals
}

const (
	pageShift = 12
	pageSize  = 1 << pageShift
)

type devBuf struct {
	name       string
	base       uint64
	data       []byte
	ready      []uint64                  // a bit per page: materialized; nil when every page is
	fill       byte                      // what a page holds when it is materialized, without src
	src        func(off int, dst []byte) // writes the buffer's bytes from off into dst (an input)
	input      bool                      // holds data from the start: always valid for taint tracking
	valid      []byte                    // taint tracking: 1 where a byte was written with a value computed from inputs only
	validPages []bool                    // taint tracking: pages holding a valid byte
}

// NewDevice returns an empty device.
func NewDevice() *Device { return &Device{next: 1 << 20, syms: map[string]uint64{}} }

// Alloc allocates size zeroed bytes and returns their address.
func (d *Device) Alloc(name string, size int) uint64 {
	return d.alloc(&devBuf{name: name, data: make([]byte, size)})
}

// allocLazy allocates size bytes whose pages are materialized on first touch: from src
// (an input: its data) or filled with fill.
func (d *Device) allocLazy(name string, size int, fill byte, src func(off int, dst []byte), input bool) uint64 {
	b := &devBuf{name: name, data: make([]byte, size), fill: fill, src: src, input: input}
	if src != nil || fill != 0 {
		b.ready = make([]uint64, (size>>pageShift+64)/64)
	}
	return d.alloc(b)
}

func (d *Device) alloc(b *devBuf) uint64 {
	b.base = d.next
	d.bufs = append(d.bufs, b)
	d.next += uint64(len(b.data)+255) &^ 255
	d.next += 256 // a gap: an access past the end of one buffer is an error, not another buffer
	return b.base
}

// Bytes returns the allocation at addr, every page materialized.
func (d *Device) Bytes(addr uint64) []byte {
	for _, b := range d.bufs {
		if b.base == addr {
			for p := 0; p<<pageShift < len(b.data); p++ {
				b.page(p)
			}
			return b.data
		}
	}
	return nil
}

// buf returns the allocation at addr.
func (d *Device) buf(addr uint64) *devBuf {
	for _, b := range d.bufs {
		if b.base == addr {
			return b
		}
	}
	return nil
}

// page materializes page p.
func (b *devBuf) page(p int) {
	if b.ready == nil || b.ready[p/64]&(1<<(p%64)) != 0 {
		return
	}
	b.ready[p/64] |= 1 << (p % 64)
	lo := p << pageShift
	dst := b.data[lo:min(lo+pageSize, len(b.data))]
	if b.src != nil {
		b.src(lo, dst)
		return
	}
	for i := range dst {
		dst[i] = b.fill
	}
}

// find returns the buffer holding n bytes at addr and their offset in it; the bytes'
// page is materialized. An access must not cross a page (every PTX access lossgen emits is
// aligned to its size).
func (d *Device) find(addr uint64, n int) (*devBuf, int, error) {
	i := sort.Search(len(d.bufs), func(i int) bool { return d.bufs[i].base+uint64(len(d.bufs[i].data)) > addr })
	if i < len(d.bufs) && addr >= d.bufs[i].base && addr+uint64(n) <= d.bufs[i].base+uint64(len(d.bufs[i].data)) {
		b := d.bufs[i]
		off := int(addr - b.base)
		if off>>pageShift != (off+n-1)>>pageShift {
			return nil, 0, fmt.Errorf("misaligned global access of %d bytes at %#x", n, addr)
		}
		b.page(off >> pageShift)
		return b, off, nil
	}
	return nil, 0, fmt.Errorf("out-of-bounds global access of %d bytes at %#x", n, addr)
}

// Load places a module's initialised globals in device memory.
func (d *Device) Load(m *Module) {
	names := make([]string, 0, len(m.Globals))
	for n := range m.Globals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		addr := d.Alloc("global "+n, len(m.Globals[n]))
		b := d.buf(addr)
		b.input = true // constants: valid data
		copy(b.data, m.Globals[n])
		d.syms[n] = addr
	}
}

// writers records, for one launch, which thread wrote each 4-byte word of global memory
// (race detection), one 4 KiB page at a time.
type writers map[uint64]*[pageSize / 4]int32

// check records an access of n bytes at addr by thread gid and reports a race: a word
// written by one thread and read or written by another in the same launch.
func (w writers) check(addr uint64, n int, gid int, write bool) error {
	for a := addr &^ 3; a < addr+uint64(n); a += 4 {
		pg := w[a>>pageShift]
		slot := (a & (pageSize - 1)) >> 2
		if pg != nil {
			if by := pg[slot]; by != 0 && int(by-1) != gid {
				return fmt.Errorf("global-memory race: %#x written by thread %d of this launch and accessed by thread %d", a, by-1, gid)
			}
		}
		if write {
			if pg == nil {
				pg = new([pageSize / 4]int32)
				w[a>>pageShift] = pg
			}
			pg[slot] = int32(gid + 1)
		}
	}
	return nil
}
