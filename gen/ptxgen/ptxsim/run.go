package ptxsim

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime"
)

// RunTable does what a CUDA user does with a generated package's PTX and launch table:
// allocates every buffer zero-filled, copies the inputs in (by data name), runs the launches
// in order and copies the outputs out (by output name, as float64).
func RunTable(ptx string, t runtime.LaunchTable, inputs map[string]golden.Array) (map[string]golden.Array, Stats, error) {
	return run(ptx, t, inputs, 0)
}

// RunTableDirty is RunTable with every output and scratch buffer filled with 0xFF bytes (NaN
// in every float) instead of zeros: kernels that never read a buffer before writing it give
// the same bits, which is what lets a caller reuse buffers across calls without clearing them.
func RunTableDirty(ptx string, t runtime.LaunchTable, inputs map[string]golden.Array) (map[string]golden.Array, Stats, error) {
	return run(ptx, t, inputs, 0xFF)
}

func run(ptx string, t runtime.LaunchTable, inputs map[string]golden.Array, fill byte) (map[string]golden.Array, Stats, error) {
	var total Stats
	m, err := Parse(ptx)
	if err != nil {
		return nil, total, err
	}
	d := NewDevice()
	d.Load(m)
	addr := map[string]uint64{}
	for _, b := range t.Buffers {
		addr[b.Name] = d.Alloc(b.Name, b.Length*elemSize(b.DType))
		if b.Role != "input" {
			if fill != 0 { // Alloc zeroes
				buf := d.Bytes(addr[b.Name])
				for i := range buf {
					buf[i] = fill
				}
			}
			continue
		}
		name := b.Name[len("in/"):]
		a, ok := inputs[name]
		if !ok {
			return nil, total, fmt.Errorf("no input %q", name)
		}
		if err := put(d.Bytes(addr[b.Name]), b, a); err != nil {
			return nil, total, err
		}
	}
	for _, l := range t.Launches {
		args := make([]uint64, len(l.Params))
		for i, p := range l.Params {
			a, ok := addr[p]
			if !ok {
				return nil, total, fmt.Errorf("launch %s: no buffer %q", l.Kernel, p)
			}
			args[i] = a
		}
		st, err := d.Launch(m, l.Kernel, l.Grid[0], l.Block[0], args)
		total.Instructions += st.Instructions
		total.Barriers += st.Barriers
		total.Shuffles += st.Shuffles
		if err != nil {
			return nil, total, err
		}
	}
	out := map[string]golden.Array{}
	for _, b := range t.Buffers {
		name, ok := strings.CutPrefix(b.Name, "out/")
		if g, isGrad := strings.CutPrefix(b.Name, "grad/"); isGrad {
			name, ok = "grad."+g, true // a gradient, under its output name
		}
		if !ok || (b.Role != "output" && b.Role != "gradient" && b.Role != "fault") {
			continue
		}
		raw := d.Bytes(addr[b.Name])
		v := make([]float64, b.Length)
		for i := range v {
			if b.DType == "float64" {
				v[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
			} else {
				v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
			}
		}
		out[name] = golden.Array{Shape: b.Shape, Data: v}
	}
	return out, total, nil
}

func elemSize(dt string) int {
	switch dt {
	case "bool":
		return 1
	case "float32":
		return 4
	}
	return 8
}

// put copies an input array into device bytes, checking length and type.
func put(dst []byte, b runtime.Buffer, a golden.Array) error {
	if a.Len() != b.Length {
		return fmt.Errorf("input %s has %d elements, want %d", b.Name, a.Len(), b.Length)
	}
	switch x := a.Data.(type) {
	case []float32:
		if b.DType != "float32" {
			return fmt.Errorf("input %s is float32, want %s", b.Name, b.DType)
		}
		for i, v := range x {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case []float64:
		if b.DType != "float64" {
			return fmt.Errorf("input %s is float64, want %s", b.Name, b.DType)
		}
		for i, v := range x {
			binary.LittleEndian.PutUint64(dst[8*i:], math.Float64bits(v))
		}
	case []bool:
		for i, v := range x {
			if v {
				dst[i] = 1
			}
		}
	case []int64:
		for i, v := range x {
			binary.LittleEndian.PutUint64(dst[8*i:], uint64(v))
		}
	default:
		return fmt.Errorf("input %s: unsupported type %T", b.Name, a.Data)
	}
	return nil
}
