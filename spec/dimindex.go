package spec

import (
	"slices"
	"strconv"
	"strings"
)

// batchIndex is a DimIndex parameter written as TorchRL's integer dim (time_dim: 0), until
// validate knows the batch and resolves it to a dim name (resolveDimIndex).
type batchIndex int

// Layout lists the batch dims in the order of the keys' layout: the order of dims, which is
// the order of every tensor's dims (it may differ from the order batch lists them in).
func (s *Spec) Layout() []string {
	var out []string
	for _, d := range s.Dims {
		for _, b := range s.Batch {
			if b == d.Name {
				out = append(out, b)
			}
		}
	}
	return out
}

// resolveDimIndex replaces an integer value of a DimIndex parameter by the name of the batch
// dim at that position of the keys' layout, counting from the end when negative, as
// TorchRL's _get_time_dim does with the tensordict's batch dims
// (torchrl/objectives/value/advantages.py). It reports whether the value is usable.
func (d *decoder) resolveDimIndex(s *Spec, st *Stage, p *ParamDef) bool {
	v := st.Values[p.Name]
	i, ok := v.V.(batchIndex)
	if !ok {
		return true
	}
	layout := s.Layout()
	j := int(i)
	if j < 0 {
		j += len(layout)
	}
	if j < 0 || j >= len(layout) {
		var each []string
		for k, name := range layout {
			each = append(each, itoa(k)+" or "+itoa(k-len(layout))+" is "+name)
		}
		d.errs = append(d.errs, &Error{Pos: v.Pos, Msg: st.Path + "." + p.Name + ": " + itoa(int(i)) + " is not a batch dim: TorchRL's integer dims count the " +
			itoa(len(layout)) + " batch dims [" + strings.Join(layout, ", ") + "] of the keys' layout (" + strings.Join(each, "; ") + "); write one of them, e.g. " +
			p.Name + ": " + layout[len(layout)-1]})
		return false
	}
	st.Values[p.Name] = Value{V: layout[j], Pos: v.Pos, Written: true}
	return true
}

// dimSize is a DimSize parameter written as a dim's name (action_dim: D), until validate
// knows the dims and resolves it to the size (resolveDimSize).
type dimSize string

// resolveDimSize replaces a dim name written for a DimSize parameter by the dim's size,
// checked against the parameter's range. It reports whether the value is usable.
func (d *decoder) resolveDimSize(s *Spec, st *Stage, p *ParamDef) bool {
	v := st.Values[p.Name]
	name, ok := v.V.(dimSize)
	if !ok {
		return true
	}
	size := s.DimSize(string(name))
	switch {
	case size == 0:
		d.errs = append(d.errs, &Error{Pos: v.Pos, Msg: st.Path + "." + p.Name + ": " + strconv.Quote(string(name)) +
			" is not a dim: want an integer, or the name of a dim declared under dims (read as its size)"})
		return false
	case !p.inRange(float64(size)):
		d.errs = append(d.errs, &Error{Pos: v.Pos, Msg: st.Path + "." + p.Name + ": must be in " + p.fmtRange() + ", got " + string(name) + " = " + itoa(size)})
		return false
	case slices.Contains(s.Batch, string(name)):
		d.errs = append(d.errs, &Error{Pos: v.Pos, Msg: st.Path + "." + p.Name + ": " + strconv.Quote(string(name)) +
			" is a batch dim, not a size of one element: give the number, or the name of a dim of the element"})
		return false
	}
	st.Values[p.Name] = Value{V: size, Pos: v.Pos, Written: true, Dim: string(name)}
	return true
}
