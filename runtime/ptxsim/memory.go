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
	name  string
	base  uint64
	size  int
	data  []byte                    // contiguous storage (Alloc); nil for a lazy buffer
	pages [][]byte                  // a lazy buffer's pages, nil until touched
	fill  byte                      // what a lazy page holds when it is made, without src
	src   func(off int, dst []byte) // writes a lazy input's bytes from off into dst
	input bool                      // holds data from the start: always valid for taint tracking
	// valid is, per page, 1 for each byte written with a value computed from inputs only
	// (taint tracking); a nil page has none.
	valid [][]byte
}

// NewDevice returns an empty device.
func NewDevice() *Device { return &Device{next: 1 << 20, syms: map[string]uint64{}} }

// Alloc allocates size zeroed bytes and returns their address.
func (d *Device) Alloc(name string, size int) uint64 {
	return d.alloc(&devBuf{name: name, size: size, data: make([]byte, size)})
}

// allocLazy allocates size bytes whose pages are made on first touch: from src (an input:
// its data) or filled with fill.
func (d *Device) allocLazy(name string, size int, fill byte, src func(off int, dst []byte), input bool) uint64 {
	return d.alloc(&devBuf{name: name, size: size, pages: make([][]byte, (size+pageSize-1)>>pageShift), fill: fill, src: src, input: input})
}

func (d *Device) alloc(b *devBuf) uint64 {
	b.base = d.next
	d.bufs = append(d.bufs, b)
	d.next += uint64(b.size+255) &^ 255
	d.next += 256 // a gap: an access past the end of one buffer is an error, not another buffer
	return b.base
}

// Bytes returns the allocation at addr made by Alloc (nil for any other).
func (d *Device) Bytes(addr uint64) []byte {
	if b := d.buf(addr); b != nil {
		return b.data
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

// page returns page p's bytes, making it if need be.
func (b *devBuf) page(p int) []byte {
	lo := p << pageShift
	if b.data != nil {
		return b.data[lo:min(lo+pageSize, b.size)]
	}
	if pg := b.pages[p]; pg != nil {
		return pg
	}
	pg := make([]byte, min(pageSize, b.size-lo))
	if b.src != nil {
		b.src(lo, pg)
	} else if b.fill != 0 {
		for i := range pg {
			pg[i] = b.fill
		}
	}
	b.pages[p] = pg
	return pg
}

// at returns the n bytes at offset off (within one page).
func (b *devBuf) at(off, n int) []byte {
	o := off & (pageSize - 1)
	return b.page(off >> pageShift)[o : o+n]
}

// validAt returns the taint shadow of the n bytes at offset off, making its page when make
// is set (else nil for a page never written).
func (b *devBuf) validAt(off, n int, make_ bool) []byte {
	if b.valid == nil {
		if !make_ {
			return nil
		}
		b.valid = make([][]byte, (b.size+pageSize-1)>>pageShift)
	}
	p := off >> pageShift
	if b.valid[p] == nil {
		if !make_ {
			return nil
		}
		b.valid[p] = make([]byte, min(pageSize, b.size-p<<pageShift))
	}
	o := off & (pageSize - 1)
	return b.valid[p][o : o+n]
}

// find returns the buffer holding n bytes at addr and their offset in it. An access must not
// cross a page (every PTX access lossgen emits is aligned to its size).
func (d *Device) find(addr uint64, n int) (*devBuf, int, error) {
	i := sort.Search(len(d.bufs), func(i int) bool { return d.bufs[i].base+uint64(d.bufs[i].size) > addr })
	if i < len(d.bufs) && addr >= d.bufs[i].base && addr+uint64(n) <= d.bufs[i].base+uint64(d.bufs[i].size) {
		b := d.bufs[i]
		off := int(addr - b.base)
		if off>>pageShift != (off+n-1)>>pageShift {
			return nil, 0, fmt.Errorf("misaligned global access of %d bytes at %#x", n, addr)
		}
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
