package ptxsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
)

// RunTable does what a CUDA user does with a generated package's PTX and launch table:
// allocates every buffer zero-filled, copies the inputs in (by data name), runs the launches
// in order and copies the outputs out (by output name, as float64).
func RunTable(ptx string, t runtime.LaunchTable, inputs map[string]golden.Array) (map[string]golden.Array, Stats, error) {
	return dense(Simulate(ptx, t, inputs, Part{Fill: 0}))
}

// RunTableDirty is RunTable with every output and scratch buffer filled with 0xFF bytes (NaN
// in every float) instead of zeros: kernels that never read a buffer before writing it give
// the same bits, which is what lets a caller reuse buffers across calls without clearing them.
func RunTableDirty(ptx string, t runtime.LaunchTable, inputs map[string]golden.Array) (map[string]golden.Array, Stats, error) {
	return dense(Simulate(ptx, t, inputs, Whole))
}

func dense(r *Result, err error) (map[string]golden.Array, Stats, error) {
	if err != nil {
		if r != nil {
			return nil, r.Stats, err
		}
		return nil, Stats{}, err
	}
	out := map[string]golden.Array{}
	for name, p := range r.Outputs {
		out[name] = golden.Array{Shape: p.Shape, Data: p.Value}
	}
	return out, r.Stats, nil
}

// Part is how much of a launch table Simulate runs.
//
// Whole (the zero MaxIter) runs every block of every launch to the end. A partial
// simulation (MaxIter > 0) runs, of every launch, the first, a middle (grid/2) and the last
// thread block (every block of a launch of at most three), and stops each thread of those
// blocks after MaxIter iterations of its loops over batch elements (the $L_loop labels of ptxgen's kernels; a thread whose loops end sooner runs
// to its end). Memory that no simulated thread wrote — the outputs of the blocks skipped,
// reduction states that a stopped thread never stored — is tracked as tainted, through
// every register, predicate, shared and global word a value flows into, so a partial result
// holds exactly the output elements computed from the inputs alone, each with the bits a
// whole simulation gives it. A branch on a tainted predicate taints everything the thread
// writes after it (ptxgen's kernels branch only on thread indices and loop counters), and a
// selp's result is tainted when either operand is, whichever it selects: so which elements
// a part computes depends on the launch table only, never on the input values.
type Part struct {
	MaxIter int
	// Budget, when not 0, stops the simulation with ErrBudget once it has executed that many
	// instructions.
	Budget int64
	// Fill is the byte output and scratch buffers start as (0xFF: NaN in every float, so a
	// kernel reading a buffer before writing it shows).
	Fill byte
}

// ErrBudget is the error of a simulation stopped at its Part's Budget.
var ErrBudget = errors.New("ptxsim: instruction budget exhausted")

// Whole is the whole simulation, on buffers full of NaN bytes.
var Whole = Part{Fill: 0xFF}

// Sampled is the partial simulation generated tests run by default: eight iterations of
// every thread of the first, middle and last block of each launch (see Part).
var Sampled = Part{MaxIter: 8, Fill: 0xFF}

// IsWhole reports whether p runs every launch whole.
func (p Part) IsWhole() bool { return p.MaxIter == 0 }

// blocks lists the blocks p runs of a launch over grid blocks (nil: all).
func (p Part) blocks(grid int) []int {
	if p.IsWhole() || grid <= 3 {
		return nil
	}
	return []int{0, grid / 2, grid - 1}
}

// Result is what a simulation computed.
type Result struct {
	// Outputs are the output and gradient buffers (gradients under "grad.<input>"), each
	// with the elements the part computed from the inputs alone.
	Outputs map[string]Partial
	Stats   Stats
}

// Partial is the elements of one output a simulation computed: all of them (Index nil),
// or those at the sorted flat indices Index.
type Partial struct {
	Shape []int
	Len   int       // the output's number of elements
	Index []int64   // nil: every element, in order
	Value []float64 // the values, as float64
}

// Coverage identifies which elements of an output a partial simulation computes: their
// number and an order-independent hash of their flat indices (the wrapping sum of
// SplitMix64's mix of each index), in 16 hex digits.
type Coverage struct {
	N    int
	Hash string
}

// Coverage returns which elements p holds.
func (p Partial) Coverage() Coverage {
	var h uint64
	if p.Index == nil {
		for i := 0; i < p.Len; i++ {
			h += coverMix(uint64(i))
		}
		return Coverage{N: p.Len, Hash: fmt.Sprintf("%016x", h)}
	}
	for _, i := range p.Index {
		h += coverMix(uint64(i))
	}
	return Coverage{N: len(p.Index), Hash: fmt.Sprintf("%016x", h)}
}

func coverMix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Simulate runs the launch table as a CUDA user would — allocate every buffer, copy the
// inputs in (by data name), run the launches in order, copy the outputs out — on the part p
// of every launch (see Part). A failed launch returns the statistics so far with its error.
// When a gather read an index input out of range (its fault buffer is not 0) it returns the
// result with a *runtime.IndexError, the error Forward returns for those inputs.
func Simulate(ptx string, t runtime.LaunchTable, inputs map[string]golden.Array, p Part) (*Result, error) {
	res := &Result{Outputs: map[string]Partial{}}
	m, err := Parse(ptx)
	if err != nil {
		return nil, err
	}
	d := NewDevice()
	d.Load(m)
	addr := map[string]uint64{}
	for _, b := range t.Buffers {
		size := b.Length * elemSize(b.DType)
		if b.Role != "input" {
			addr[b.Name] = d.allocLazy(b.Name, size, p.Fill, nil, false)
			continue
		}
		name := b.Name[len("in/"):]
		a, ok := inputs[name]
		if !ok {
			return nil, fmt.Errorf("no input %q", name)
		}
		src, err := source(b, a)
		if err != nil {
			return nil, err
		}
		addr[b.Name] = d.allocLazy(b.Name, size, 0, src, true)
	}
	for _, l := range t.Launches {
		args := make([]uint64, len(l.Params))
		for i, prm := range l.Params {
			a, ok := addr[prm]
			if !ok {
				return nil, fmt.Errorf("launch %s: no buffer %q", l.Kernel, prm)
			}
			args[i] = a
		}
		limit := int64(0)
		if p.Budget > 0 {
			if limit = p.Budget - res.Stats.Instructions; limit <= 0 {
				return res, ErrBudget
			}
		}
		st, err := d.launch(m, l.Kernel, l.Grid[0], l.Block[0], args, p.blocks(l.Grid[0]), p.MaxIter, !p.IsWhole(), limit)
		res.Stats.add(st)
		if err != nil {
			return res, err
		}
	}
	for _, b := range t.Buffers {
		name, ok := strings.CutPrefix(b.Name, "out/")
		if g, isGrad := strings.CutPrefix(b.Name, "grad/"); isGrad {
			name, ok = "grad."+g, true // a gradient, under its output name
		}
		if !ok || (b.Role != "output" && b.Role != "gradient" && b.Role != "fault") {
			continue
		}
		res.Outputs[name] = read(d.buf(addr[b.Name]), b, !p.IsWhole())
	}
	return res, indexFaults(d, t, addr, inputs)
}

// indexFaults reads the table's index fault buffers after the launches, as a CUDA user
// does, and returns the first fault as the *runtime.IndexError Forward gives for the same
// inputs (runtime.IndexFault), or nil. A partial simulation sees the faults of the elements
// it ran.
func indexFaults(d *Device, t runtime.LaunchTable, addr map[string]uint64, inputs map[string]golden.Array) error {
	for _, b := range t.Buffers {
		if b.Role != "fault" || b.Input == "" {
			continue
		}
		w := d.buf(addr[b.Name]).at(0, 8)
		data, _ := inputs[strings.TrimPrefix(b.Input, "in/")].Data.([]int64)
		words := [2]uint32{binary.LittleEndian.Uint32(w), binary.LittleEndian.Uint32(w[4:])}
		if err := runtime.IndexFault(t.Package, b, words, data); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stats) add(o Stats) {
	s.Instructions += o.Instructions
	s.Barriers += o.Barriers
	s.Shuffles += o.Shuffles
	s.Blocks += o.Blocks
	s.Cut += o.Cut
}

// read copies an output buffer out: every element, or with taint tracking those whose bytes
// were all written with untainted values.
func read(db *devBuf, b runtime.Buffer, tracked bool) Partial {
	es := elemSize(b.DType)
	p := Partial{Shape: b.Shape, Len: b.Length}
	value := func(i int) float64 {
		raw := db.at(i*es, es)
		if b.DType == "float64" {
			return math.Float64frombits(binary.LittleEndian.Uint64(raw))
		}
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(raw)))
	}
	if !tracked {
		p.Value = make([]float64, b.Length)
		for i := range p.Value {
			p.Value[i] = value(i)
		}
		return p
	}
	p.Index = []int64{}
	for pg, v := range db.valid {
		if v == nil {
			continue
		}
		lo, hi := pg<<pageShift/es, min((pg+1)<<pageShift/es, b.Length)
		for i := lo; i < hi; i++ {
			if !slices.Contains(v[i*es-pg<<pageShift:(i+1)*es-pg<<pageShift], 0) {
				p.Index = append(p.Index, int64(i))
				p.Value = append(p.Value, value(i))
			}
		}
	}
	return p
}

func elemSize(dt string) int {
	switch dt {
	case "bool":
		return 1
	case "float32", "uint32":
		return 4
	}
	return 8
}

// source checks an input array against its buffer (length and type) and returns the
// function that writes its bytes from a byte offset (one page at a time).
func source(b runtime.Buffer, a golden.Array) (func(off int, dst []byte), error) {
	if a.Len() != b.Length {
		return nil, fmt.Errorf("input %s has %d elements, want %d", b.Name, a.Len(), b.Length)
	}
	switch x := a.Data.(type) {
	case []float32:
		if b.DType != "float32" {
			return nil, fmt.Errorf("input %s is float32, want %s", b.Name, b.DType)
		}
		return func(off int, dst []byte) {
			for i := 0; i < len(dst); i += 4 {
				binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(x[(off+i)/4]))
			}
		}, nil
	case []float64:
		if b.DType != "float64" {
			return nil, fmt.Errorf("input %s is float64, want %s", b.Name, b.DType)
		}
		return func(off int, dst []byte) {
			for i := 0; i < len(dst); i += 8 {
				binary.LittleEndian.PutUint64(dst[i:], math.Float64bits(x[(off+i)/8]))
			}
		}, nil
	case []bool:
		return func(off int, dst []byte) {
			for i := range dst {
				dst[i] = 0
				if x[off+i] {
					dst[i] = 1
				}
			}
		}, nil
	case []int64:
		return func(off int, dst []byte) {
			for i := 0; i < len(dst); i += 8 {
				binary.LittleEndian.PutUint64(dst[i:], uint64(x[(off+i)/8]))
			}
		}, nil
	}
	return nil, fmt.Errorf("input %s: unsupported type %T", b.Name, a.Data)
}
