package spec

import (
	"math"
	"math/big"

	"go.yaml.in/yaml/v3"
)

// MaxLinspace bounds n_atoms of a {vmin, vmax, n_atoms} support: the values become a constant
// of the generated kernels (C51 uses 51 atoms; a few hundred is large).
const MaxLinspace = 1 << 16

// linspaceArgs is a LinspaceDim parameter written as {vmin, vmax, n_atoms}, until validate
// knows the param_dtype and the atom dim and resolves it to the list (resolveLinspace).
type linspaceArgs struct {
	start, end float64
	n          int
	nPos       Pos // n_atoms's value, where a mismatch with the atom dim is reported
}

// linspace decodes {vmin: a, vmax: b, n_atoms: n}, TorchRL users' torch.linspace(a, b, n);
// torch.linspace's own argument names {start, end, steps} read the same.
func (d *decoder) linspace(path string, v *yaml.Node) (any, bool) {
	var ls linspaceArgs
	before := len(d.errs)
	seen := d.mapping(v, path, []field{
		{name: "vmin", aliases: []Alias{{Name: "start"}}, decode: func(p string, x *yaml.Node) { ls.start, _ = d.float(p, x) }},
		{name: "vmax", aliases: []Alias{{Name: "end"}}, decode: func(p string, x *yaml.Node) { ls.end, _ = d.float(p, x) }},
		{name: "n_atoms", aliases: []Alias{{Name: "steps"}}, decode: func(p string, x *yaml.Node) {
			n, ok := d.int(p, x)
			if ok && (n < 1 || n > MaxLinspace) {
				d.errf(x, "%s: must be in [1, %d], got %d", p, MaxLinspace, n)
			}
			ls.n, ls.nPos = n, d.at(x)
		}},
	})
	for _, k := range []string{"start", "end", "steps"} {
		delete(d.pos, join(path, k))
	}
	for _, k := range []string{"vmin", "vmax", "n_atoms"} {
		// The Spec keeps only the support's position, as for a list, so that both spellings
		// parse to the same Spec.
		delete(d.pos, join(path, k))
		if seen != nil && seen[k] == nil {
			d.errf(v, "%s: missing key %q: write {vmin: V_MIN, vmax: V_MAX, n_atoms: K}, the support torch.linspace(vmin, vmax, n_atoms)", path, k)
		}
	}
	return ls, len(d.errs) == before
}

// flatKeys are the keys of a {vmin, vmax, n_atoms} support, which a stage also accepts written
// flat in its own mapping (vmin: a, vmax: b, n_atoms: n), as TorchRL users pass them to
// build support = torch.linspace(vmin, vmax, n_atoms).
var flatKeys = []string{"vmin", "vmax", "n_atoms"}

// flatLinspace adds the flat keys to the fields of a stage with a LinspaceDim parameter,
// recording their key and value nodes, and returns that parameter (nil: none).
func (d *decoder) flatLinspace(def *StageDef, fs *[]field) *flatSupport {
	for i := range def.Params {
		if def.Params[i].LinspaceDim == "" {
			continue
		}
		f := &flatSupport{p: &def.Params[i], nodes: map[string]*yaml.Node{}}
		for _, k := range flatKeys {
			*fs = append(*fs, field{name: k, decode: func(kp string, v *yaml.Node) {
				f.nodes[k] = v
				delete(d.pos, kp)
			}})
		}
		return f
	}
	return nil
}

// flatSupport is a stage's LinspaceDim parameter and the value nodes of the flat keys written.
type flatSupport struct {
	p     *ParamDef
	nodes map[string]*yaml.Node
}

// resolveFlatLinspace reads flat vmin, vmax and n_atoms as the parameter's {vmin, vmax,
// n_atoms}, positioned at the first of them written: the Spec is the one the mapping
// spelling gives. Writing the parameter too is an error.
func (d *decoder) resolveFlatLinspace(st *Stage, seen map[string]*yaml.Node, f *flatSupport) {
	if f == nil || len(f.nodes) == 0 {
		return
	}
	path := join(st.Path, f.p.Name)
	m := &yaml.Node{Kind: yaml.MappingNode}
	var first *yaml.Node
	for _, k := range flatKeys {
		if key := seen[k]; key != nil {
			if first == nil || key.Line < first.Line || key.Line == first.Line && key.Column < first.Column {
				first = key
			}
			m.Content = append(m.Content, key, f.nodes[k])
		}
	}
	if seen[f.p.Name] != nil {
		d.errf(first, "%s: %s and %s: write the support once, as %s: {vmin: …, vmax: …, n_atoms: …} or as flat vmin, vmax and n_atoms", st.Path, first.Value, f.p.Name, f.p.Name)
		d.broken[path] = true
		return
	}
	m.Line, m.Column = f.nodes[first.Value].Line, f.nodes[first.Value].Column
	before := len(d.errs)
	x, ok := d.linspace(path, m)
	if !ok || len(d.errs) > before {
		d.broken[path] = true
		return
	}
	d.pos[path] = d.at(m)
	st.Values[f.p.Name] = Value{V: x, Pos: d.at(m), Written: true}
}

// resolveLinspace replaces a {vmin, vmax, n_atoms} value of st by the list torch.linspace
// gives in the spec's param_dtype, after checking that n_atoms is the size of the dim the
// parameter's LinspaceDim names. It reports whether the value is usable.
func (d *decoder) resolveLinspace(s *Spec, st *Stage, p *ParamDef) bool {
	v := st.Values[p.Name]
	ls, ok := v.V.(linspaceArgs)
	if !ok {
		return true
	}
	dim := st.String(p.LinspaceDim)
	if k := s.DimSize(dim); k > 0 && ls.n != k {
		d.errs = append(d.errs, &Error{Pos: ls.nPos, Msg: st.Path + "." + p.Name + ".n_atoms: " + itoa(ls.n) +
			", but the atom dim " + dim + " (" + p.LinspaceDim + ") has " + itoa(k) + ": n_atoms must equal dims." + dim})
		return false
	}
	if s.ParamDType == Float32 && max(math.Abs(ls.start), math.Abs(ls.end)) > math.MaxFloat32 {
		return false // beyond float32: stageParams reports it
	}
	vals := Linspace(ls.start, ls.end, ls.n, s.ParamDType)
	for _, x := range vals {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			d.errs = append(d.errs, &Error{Pos: v.Pos, Msg: st.Path + "." + p.Name + ": vmax − vmin overflows " + string(s.ParamDType) + ", so the linspace does too"})
			return false
		}
	}
	st.Values[p.Name] = Value{V: vals, Pos: v.Pos, Written: true}
	return true
}

// Linspace is torch.linspace(start, end, n) in dtype, the values PyTorch's CPU kernel gives
// at its default AVX2 capability (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp,
// linspace_kernel, run by cpu_serial_kernel_vec). start and end are rounded to dtype and
// step = (end − start)/(n − 1) in it. The kernel's scalar form of element i is start + step·i
// for i < n/2 and end − step·(n − 1 − i) from n/2 on, both ends exact, which GCC's
// -mfma builds compute as one fused multiply-add. Its vector form fills two vectors of
// lanes (8 float32, 4 float64) at a time: each vector's first element x₀ is the scalar
// form's at its index, and lane k is x₀ + k·step (product and sum rounded apart,
// Vectorized::arange); the elements after the last pair of vectors take the scalar form.
// So a vector that straddles n/2 continues the lower half's formula, and some elements
// differ in the last bit from the scalar form (19 of linspace(−10, 10, 51)'s float32 ones).
// This matches torch 1.13's and 2.x's CPU linspace for n ≤ 32768 (one parallel chunk);
// an AVX-512 torch (ATEN_CPU_CAPABILITY=avx512) has 16-lane vectors, and CUDA's kernel the
// scalar form, so theirs can differ in the last bit: write the support as a list to hold
// exact values. n = 1 gives [start] (RangeFactories.cpp fills it). The results are dtype
// values held in float64.
func Linspace(start, end float64, n int, dtype DType) []float64 {
	if dtype == Float32 {
		return linspace(float32(start), float32(end), n, linspaceLanes32, fma32)
	}
	return linspace(start, end, n, linspaceLanes64, math.FMA)
}

// linspace is Linspace in T, with PyTorch's vector width for T (lanes) and T's fused
// multiply-add.
func linspace[T float32 | float64](a, b T, n, lanes int, fma func(x, y, z T) T) []float64 {
	out := make([]float64, n)
	if n == 1 {
		out[0] = float64(a)
		return out
	}
	half := n / 2
	step := (b - a) / T(n-1)
	scalar := func(i int) T {
		if i < half {
			return fma(step, T(i), a)
		}
		return fma(-step, T(n-1-i), b)
	}
	i := 0
	for ; i <= n-2*lanes; i += 2 * lanes {
		for v := i; v < i+2*lanes; v += lanes {
			x0 := scalar(v)
			for k := range lanes {
				// The conversion rounds the product, which Go could fuse with the sum.
				out[v+k] = float64(x0 + T(T(k)*step))
			}
		}
	}
	for ; i < n; i++ {
		out[i] = float64(scalar(i))
	}
	return out
}

// The lanes of PyTorch's AVX2 Vectorized<float> and Vectorized<double>.
const (
	linspaceLanes32 = 8
	linspaceLanes64 = 4
)

// fma32 is x·y + z rounded once to float32 (C's fmaf): the product of two float32 values is
// exact in float64, and the sum is formed exactly before its one rounding.
func fma32(x, y, z float32) float32 {
	s := new(big.Float).SetPrec(256).SetFloat64(float64(x) * float64(y))
	s.Add(s, new(big.Float).SetFloat64(float64(z)))
	f, _ := s.Float32()
	return f
}
