package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/passes"
)

// explainPasses prints the IR passes as they run on c's lowered graph: Forward's, then, for
// a package with ForwardBackward, Backward's from the graph Prepare left. Each pass with its
// kind and doc, then the graph a rewrite returned (or that it left it unchanged), what an
// analysis found, or that a check passed.
func explainPasses(w io.Writer, c *gen.Compiled) error {
	g, _, err := lower.Lower(c.Spec)
	if err != nil {
		return err
	}
	list := passes.Forward
	if c.Backward != nil {
		list = append(slices.Clip(list), passes.Backward...)
	}
	fmt.Fprintf(w, "passes (%d): Forward's %d", len(list), len(passes.Forward))
	if c.Backward != nil {
		fmt.Fprintf(w, ", then ForwardBackward's %d from the graph after pass %d", len(passes.Backward), len(passes.Prepare))
	}
	fmt.Fprintln(w, ":")
	for i, p := range list {
		fmt.Fprintf(w, "  %2d %-16s %-8s %s\n", i+1, p.Name, p.Kind, p.Doc)
	}
	fmt.Fprintf(w, "\nlowered (%d nodes):\n%s", len(g.Nodes), graphText(g))
	last := graphText(g)
	i := 0
	trace := func(g *ir.Graph, ps []passes.Pass) (*ir.Graph, error) {
		return passes.Trace(g, ps, func(p passes.Pass, g *ir.Graph) {
			i++
			fmt.Fprintf(w, "\nafter %d %s (%s): ", i, p.Name, p.Kind)
			switch {
			case p.Kind == passes.Check:
				fmt.Fprintln(w, "ok")
			case p.Report != nil:
				lines := p.Report(g)
				fmt.Fprintf(w, "%d facts\n", len(lines))
				for _, l := range lines {
					fmt.Fprintf(w, "  %s\n", l)
				}
			case graphText(g) == last:
				fmt.Fprintln(w, "graph unchanged")
			default:
				last = graphText(g)
				fmt.Fprintf(w, "%d nodes\n%s", len(g.Nodes), last)
			}
		})
	}
	prepared, err := trace(g, passes.Prepare)
	if err != nil {
		return err
	}
	if _, err := trace(prepared, passes.FinishForward); err != nil || c.Backward == nil {
		return err
	}
	last = graphText(prepared)
	_, err = trace(prepared, passes.Backward)
	return err
}

// graphText is g's nodes, one a line, then its outputs.
func graphText(g *ir.Graph) string {
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	for _, o := range g.Outputs {
		fmt.Fprintf(&b, "  out %s = v%d (%s)\n", o.Name, o.Node.ID, o.Role)
	}
	return b.String()
}
