package gogen

import (
	"fmt"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// FieldName turns a data name ("next.reward", "loss_objective", "ESS") into an exported Go
// identifier (NextReward, LossObjective, ESS).
func FieldName(data string) string {
	if name := ir.CamelCase(data, true); name != "" {
		return name
	}
	return "X" + fmt.Sprintf("%x", data)
}

// InputField is the Inputs field that holds input in: FieldName of its data name, or for
// kernel state (ir.Input.State) an unexported one-element slice that Forward fills from
// Inputs.State (stateBeta).
func InputField(in *ir.Input) string {
	if in.State {
		return "state" + FieldName(in.Name)
	}
	return FieldName(in.Name)
}

// fieldNames maps each data name to its Go field name and fails when two collide.
func fieldNames(what string, names []string) (map[string]string, error) {
	out := map[string]string{}
	by := map[string]string{}
	for _, n := range names {
		f := FieldName(n)
		if other, dup := by[f]; dup {
			return nil, fmt.Errorf("%s %q and %q both become the Go field %s; rename one under keys", what, other, n, f)
		}
		by[f] = n
		out[n] = f
	}
	return out, nil
}

// Identifiers names the nodes of g as the Go kernels do (ir.Identifiers), for the other
// backends' comments to use the same names.
func Identifiers(g *ir.Graph) map[int]string {
	return ir.Identifiers(g, func(name string) bool { return taken(g, name) })
}

// taken reports the names a kernel function uses for itself, which no node's variable may
// take: its parameters (a chunk function's st, lo and hi too), loop and index variables, helpers and packages, scratch buffers
// (s0), and the suffixes of accumulators and carries (see accName).
func taken(g *ir.Graph, name string) bool {
	switch name {
	case "in", "out", "grads", "s", "st", "lo", "hi", "k", "b2f", "sel", "math", "runtime", "sync":
		return true
	}
	for _, d := range g.Dims {
		if name == loopVar(d.Name) {
			return true
		}
	}
	if strings.HasSuffix(name, "Acc") || strings.HasSuffix(name, "Carry") || strings.HasPrefix(name, "const") || strings.HasPrefix(name, "fbConst") {
		return true
	}
	return len(name) > 1 && name[0] == 's' && strings.Trim(name[1:], "0123456789") == ""
}

// id is the variable that holds node n in the pass: its own (ir.Identifiers), or for a
// detach or broadcast, which emit no code, that of the node it reads.
func (p *pass) id(n *ir.Node) string { return p.e.names[p.root(n).ID] }

// root follows detach and broadcast nodes to the node whose variable holds their value.
func (p *pass) root(n *ir.Node) *ir.Node {
	if r := p.alias[n.ID]; r != nil {
		return r
	}
	return n
}

// accName is the accumulator of reduction r: a barrier reduction's is named after it (its
// value exists only as the accumulator in the pass that computes it), an inner reduction's
// has the suffix Acc, as the node's own variable holds its result (minQAcc, minQ).
func (e *gen) accName(r *ir.Node) string {
	name := e.names[r.ID]
	if isFallback(name) {
		return fmt.Sprintf("acc%d", r.ID)
	}
	if e.g.InnerReduce(r) {
		return name + "Acc"
	}
	return name
}

// carryName is the running value of scan n between iterations: gaeCarry, or carry15.
func (e *gen) carryName(n *ir.Node) string {
	name := e.names[n.ID]
	if isFallback(name) {
		return fmt.Sprintf("carry%d", n.ID)
	}
	return name + "Carry"
}

// isFallback reports a name ir.Identifiers gives a node with no name of its own (v12, c8).
func isFallback(name string) bool {
	return len(name) > 1 && (name[0] == 'v' || name[0] == 'c') && strings.Trim(name[1:], "0123456789") == ""
}

// isScalarConst reports a scalar constant, which a pass declares once before its loops.
func isScalarConst(n *ir.Node) bool { return n.Op == ir.OpConst && len(n.Shape) == 0 }

// scalarConsts are the scalar constants the steps of bl (and its loops) load, in order.
func scalarConsts(bl *plan.Block) []*ir.Node {
	var out []*ir.Node
	seen := map[int]bool{}
	var walk func(bl *plan.Block)
	walk = func(bl *plan.Block) {
		for _, st := range bl.Steps {
			switch {
			case st.Kind == plan.Loop:
				walk(st.Block)
			case st.Kind == plan.Load && isScalarConst(st.Node) && !seen[st.Node.ID]:
				seen[st.Node.ID] = true
				out = append(out, st.Node)
			}
		}
	}
	walk(bl)
	return out
}
