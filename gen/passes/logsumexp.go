package passes

import (
	"fmt"
	"math"
	"slices"

	"github.com/lossgen/lossgen/gen/ir"
)

// LogSumExpPairs attaches to g what a backend's logsumexp can share with the rest of the
// graph (ir.Facts.Twin, Exp):
//
//   - the twin: a logsumexp of 2·x next to a logsumexp of x over the same axes (ClipPPO's
//     ESS has both): e^(2x) = (e^x)², so where the two run in one loop the twin needs no exp
//     of its own, and its argument is in a guard range when x is (the AVX2 kernels'
//     float64 sums carry the squares). A logsumexp that is itself a twin is no base.
//   - the shared exp: the graph's exp(x) of a logsumexp's argument x (ClipPPO's ratio next
//     to ESS's logsumexp of the log-weight), which a loop computing both evaluates once;
//     also for an argument where(c, x, −inf) (MaskedArg), whose exp is e^x where c holds.
//
// Whether the two land in one loop is the plan's business: a backend pairs them only then.
func LogSumExpPairs(g *ir.Graph) (*ir.Graph, error) {
	exps := map[*ir.Node]*ir.Node{} // x → exp(x)
	lses := map[*ir.Node][]*ir.Node{}
	for _, n := range g.Nodes {
		switch n.Op {
		case ir.OpExp:
			exps[n.Args[0]] = n
		case ir.OpLogSumExp:
			lses[n.Args[0]] = append(lses[n.Args[0]], n)
		}
	}
	cand := map[*ir.Node]*ir.Node{}
	shared := map[*ir.Node]*ir.Node{}
	for _, r := range g.Nodes {
		if r.Op != ir.OpLogSumExp {
			continue
		}
		if e := exps[r.Args[0]]; e != nil {
			shared[r] = e
		} else if x := MaskedArg(r.Args[0]); x != nil && exps[x] != nil {
			shared[r] = exps[x]
		}
		if x := doubled(r.Args[0]); x != nil {
			for _, base := range lses[x] {
				if slices.Equal(base.Axes, r.Axes) {
					cand[r] = base
				}
			}
		}
	}
	twins := map[*ir.Node]*ir.Node{}
	for r, base := range cand {
		if cand[base] == nil {
			twins[r] = base
		}
	}
	return withFacts(g, func(f *ir.Facts) { f.Twin, f.Exp = twins, shared }), nil
}

// MaskedArg returns x when m is where(c, x, −inf), a logsumexp's argument over the kept
// elements only (GRPO's ESS), whose e^m is where(c, e^x, 0); else nil.
func MaskedArg(m *ir.Node) *ir.Node {
	if m.Op == ir.OpWhere && m.Args[2].IsScalarConst() && math.IsInf(m.Args[2].Value[0], -1) {
		return m.Args[1]
	}
	return nil
}

// doubled returns x when m is 2·x or x·2, else nil.
func doubled(m *ir.Node) *ir.Node {
	if m.Op != ir.OpMul {
		return nil
	}
	for i, k := range m.Args {
		if k.IsScalarConst() && k.Value[0] == 2 {
			return m.Args[1-i]
		}
	}
	return nil
}

// reportPairs lists the twins and shared exps (LogSumExpPairs' report), in node order.
func reportPairs(g *ir.Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		if t := g.Twin(n); t != nil {
			out = append(out, fmt.Sprintf("v%d is the 2·x twin of v%d", n.ID, t.ID))
		}
		if e := g.ExpOf(n); e != nil {
			out = append(out, fmt.Sprintf("v%d can share v%d = exp of its argument", n.ID, e.ID))
		}
	}
	return out
}
