package ir

import "fmt"

// Interval bounds the values a node takes, NaN aside: Lo ≤ v ≤ Hi (±Inf where unbounded).
type Interval struct{ Lo, Hi float64 }

// Within reports whether every value in iv lies in [lo, hi].
func (iv Interval) Within(lo, hi float64) bool { return iv.Lo >= lo && iv.Hi <= hi }

// String formats the interval as [lo, hi].
func (iv Interval) String() string { return fmt.Sprintf("[%g, %g]", iv.Lo, iv.Hi) }

// Facts are what the analysis passes (package passes) found about a graph's nodes, for every
// backend to read. They belong to one graph: Clone and Rebuild drop them, so a rewrite after
// an analysis leaves a graph without facts, and the pipeline runs its analyses last.
type Facts struct {
	// Range bounds every node's values (passes.ValueRange).
	Range map[*Node]Interval
	// Twin maps each logsumexp of 2·x to the logsumexp of x over the same axes, when the
	// graph has one and that one is not itself a twin (passes.LogSumExpPairs).
	Twin map[*Node]*Node
	// Exp maps each logsumexp of x to the graph's exp(x), when it has one
	// (passes.LogSumExpPairs).
	Exp map[*Node]*Node
}

// facts returns g's facts, or panics naming the analysis that has not run: a backend handed
// a graph that skipped the pipeline is a bug in the caller.
func (g *Graph) facts(analysis string, has func(*Facts) bool) *Facts {
	if g.Facts == nil || !has(g.Facts) {
		panic("ir: the graph has no " + analysis + " facts: run it through passes.Forward or passes.Backward")
	}
	return g.Facts
}

// Range returns the interval the value-range analysis found for n.
func (g *Graph) Range(n *Node) Interval {
	iv, ok := g.facts("value-range", func(f *Facts) bool { return f.Range != nil }).Range[n]
	if !ok {
		panic(fmt.Sprintf("ir: %s is not a node of the analysed graph", n))
	}
	return iv
}

// Twin returns the logsumexp whose 2·x twin r is (Facts.Twin), or nil.
func (g *Graph) Twin(r *Node) *Node {
	return g.facts("logsumexp-pairs", func(f *Facts) bool { return f.Twin != nil }).Twin[r]
}

// ExpOf returns the graph's exp of logsumexp r's argument (Facts.Exp), or nil.
func (g *Graph) ExpOf(r *Node) *Node {
	return g.facts("logsumexp-pairs", func(f *Facts) bool { return f.Exp != nil }).Exp[r]
}
