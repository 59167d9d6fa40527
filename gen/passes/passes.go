// Package passes holds every rewrite and analysis that runs between lowering and planning,
// as named passes in one list (Pipeline), like avo's pass.Compile: each takes a finished
// graph and returns a new one (ir.Rebuild, ir.Extend), so every backend gets their result at
// once. A rewrite returns a changed graph; an analysis returns the same nodes with what it
// found attached (ir.Facts), which the backends read instead of working it out again; a
// check returns its graph unchanged or an error. A pass returns an error rather than
// panicking. lossgen explain -passes prints the list with the graph after each pass.
//
// Folding, common-subexpression merging and dead-node removal are not passes: every graph is
// built by ir.Builder, which keeps it in that normal form, and Verify checks that it is.
package passes

import (
	"fmt"
	"slices"

	"github.com/lossgen/lossgen/gen/ir"
)

// Kind says what a pass does to its graph.
type Kind uint8

// The pass kinds.
const (
	Rewrite  Kind = iota // returns a changed graph (facts dropped)
	Check                // returns its graph unchanged, or an error
	Analysis             // returns its graph's nodes with facts attached (ir.Facts)
)

func (k Kind) String() string { return [...]string{"rewrite", "check", "analysis"}[k] }

// Pass is one named graph-to-graph function.
type Pass struct {
	Name string
	Kind Kind
	Doc  string // one line: what it does, for lossgen explain -passes
	Run  func(*ir.Graph) (*ir.Graph, error)
	// Report, for an analysis, describes what it found in the graph it returned, one line
	// per fact (lossgen explain -passes).
	Report func(*ir.Graph) []string
}

var (
	verify         = Pass{Name: "verify", Kind: Check, Doc: "the graph is well-formed (Verify)", Run: Verify}
	expOfClamp     = Pass{Name: "exp-of-clamp", Kind: Rewrite, Doc: "exp(clamp(x, lo, hi)) → clamp(exp(x), e^lo, e^hi), sharing exp(x)", Run: ExpOfClamp}
	gatherPushdown = Pass{Name: "gather-pushdown", Kind: Rewrite, Doc: "gather(f(x, y), i) → f(gather(x, i), y): gathers read inputs or stored tensors", Run: GatherPushdown}
	valueRange     = Pass{Name: "value-range", Kind: Analysis, Doc: "interval bounds of every node (ir.Facts.Range)", Run: ValueRange, Report: reportRanges}
	logSumExpPairs = Pass{Name: "logsumexp-pairs", Kind: Analysis, Doc: "logsumexp twins of 2·x and the exp(x) a logsumexp can share (ir.Facts.Twin, Exp)", Run: LogSumExpPairs, Report: reportPairs}
	autodiff       = Pass{Name: "autodiff", Kind: Rewrite, Doc: "adds grad.<x> for every differentiable input x", Run: Autodiff}
	gradientGuards = Pass{Name: "gradient-guards", Kind: Rewrite, Doc: "where(g ≠ 0, g·d, g) → g·d where g cannot be 0 (or is masked: where(m, s·d, 0))", Run: GradientGuards}
	customGrads    = Pass{Name: "custom-grad", Kind: Rewrite, Doc: "custom_grad(y, x, d) → y: its derivative d is autodiff's only", Run: CustomGrads}
)

// Prepare is the passes a lowered graph runs through before it becomes Forward's kernel
// or, through Backward, ForwardBackward's: the rewrites both share.
var Prepare = []Pass{verify, expOfClamp, gatherPushdown, verify}

// FinishForward is Forward after Prepare: the custom derivatives dropped (nothing reads
// them), a verify and the analyses.
var FinishForward = []Pass{customGrads, verify, valueRange, logSumExpPairs}

// Forward is what Forward's kernel computes from a lowered graph: Prepare, then
// FinishForward.
var Forward = append(slices.Clip(Prepare), FinishForward...)

// Backward turns a graph after Prepare into ForwardBackward's: autodiff (which reads the
// custom derivatives), then the rewrites again on the gradient, a verify and the analyses.
// The analyses come after the last rewrite of each list, since a rewrite drops the facts
// of the graph it started from. (Backward also runs on a graph after Forward, whose custom
// derivatives are gone: its gradients then differentiate the formulas, as exactly, at
// more cost.)
var Backward = []Pass{autodiff, customGrads, gradientGuards, expOfClamp, gatherPushdown, verify, valueRange, logSumExpPairs}

// Pipeline is ForwardBackward's passes, in order: Prepare, then Backward.
var Pipeline = append(slices.Clip(Prepare), Backward...)

// Compile runs g through Prepare, then Forward's rest for the forward graph and Backward
// for ForwardBackward's (nil when withGrad is false).
func Compile(g *ir.Graph, withGrad bool) (fwd, fb *ir.Graph, err error) {
	pre, err := Run(g, Prepare)
	if err != nil {
		return nil, nil, err
	}
	if fwd, err = Run(pre, FinishForward); err != nil || !withGrad {
		return fwd, nil, err
	}
	fb, err = Run(pre, Backward)
	return fwd, fb, err
}

// Run applies ps in order.
func Run(g *ir.Graph, ps []Pass) (*ir.Graph, error) {
	return Trace(g, ps, nil)
}

// Trace is Run that calls after, when non-nil, with each pass and the graph it returned.
func Trace(g *ir.Graph, ps []Pass, after func(Pass, *ir.Graph)) (*ir.Graph, error) {
	for _, p := range ps {
		var err error
		if g, err = p.Run(g); err != nil {
			return nil, fmt.Errorf("pass %s: %w", p.Name, err)
		}
		if after != nil {
			after(p, g)
		}
	}
	return g, nil
}

// withFacts returns a copy of g (the same nodes) whose facts are g's with set applied: an
// analysis adds to the facts without touching the graph it was given.
func withFacts(g *ir.Graph, set func(*ir.Facts)) *ir.Graph {
	c := *g
	f := ir.Facts{}
	if g.Facts != nil {
		f = *g.Facts
	}
	set(&f)
	c.Facts = &f
	return &c
}
