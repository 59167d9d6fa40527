package ir

import (
	"fmt"
	"math"
)

// VJP rules: for each op, given its node n and the gradient g of a scalar loss with respect
// to n's value (n's shape), the gradient contributions to n's arguments, built with the same
// IR ops (so every backend computes gradients with no code of its own; tinygrad's
// gradient.py works the same way). A contribution may have n's shape where the argument has
// fewer dims: the autodiff pass sums it over the extra ones. nil means no gradient flows to
// that argument. The kink conventions are PyTorch's (SEMANTICS.md §2.8, issue text of the
// gradients work): clamp passes the gradient at its bounds, inclusive (TieFirst);
// torch.minimum/maximum split it half and half on an exact tie; smooth_l1's derivative comes
// out as clamp(x, −1, 1) from its where-form; a NaN input gives a NaN gradient.

// VJP is one op's rule.
type VJP func(b *Builder, n, g *Node) []*Node

// vjps has a rule for every op; the autodiff pass reports an op whose rule is nil, and a test
// checks there is none. noGrad marks ops whose result is piecewise constant (comparisons,
// argmax) or that carry no gradient (constants, inputs, detach).
var vjps = [numOps]VJP{
	OpInput: noGrad, OpConst: noGrad, OpIota: noGrad, OpDetach: noGrad,
	OpNeg: func(b *Builder, n, g *Node) []*Node { return []*Node{b.Neg(g)} },
	OpAbs: func(b *Builder, n, g *Node) []*Node { return []*Node{b.gradMul(g, b.Sign(n.Args[0]))} },
	OpExp: func(b *Builder, n, g *Node) []*Node { return []*Node{b.gradMul(g, n)} },
	OpLog: func(b *Builder, n, g *Node) []*Node { return []*Node{b.gradDiv(g, n.Args[0])} },
	OpLog1p: func(b *Builder, n, g *Node) []*Node {
		return []*Node{b.gradDiv(g, b.Add(b.Const(1), n.Args[0]))}
	},
	// d/dx (e^x − 1 − x) = e^x − 1, formed as the value plus x (one add, no second exp); −1
	// below x = −40, where e^x − 1 is −1 in either dtype and value + x would be ∞ − ∞ at −∞;
	// and +∞ at x = +∞, where the value is NaN (∞ − ∞) and torch's e^x − 1 is +∞.
	OpExpM1MinusX: func(b *Builder, n, g *Node) []*Node {
		x := n.Args[0]
		d := b.Where(b.Eq(x, b.Const(math.Inf(1))), b.Const(math.Inf(1)), b.Add(n, x))
		return []*Node{b.gradMul(g, b.Where(b.Lt(x, b.Const(-40)), b.Const(-1), d))}
	},
	OpSqrt:      func(b *Builder, n, g *Node) []*Node { return []*Node{b.gradDiv(g, b.Mul(b.Const(2), n))} },
	OpBroadcast: func(b *Builder, n, g *Node) []*Node { return []*Node{g} },
	OpRoundF32:  func(b *Builder, n, g *Node) []*Node { return []*Node{g} }, // a cast's: g
	OpAdd:       func(b *Builder, n, g *Node) []*Node { return []*Node{g, g} },
	OpSub:       func(b *Builder, n, g *Node) []*Node { return []*Node{g, b.Neg(g)} },
	OpMul: func(b *Builder, n, g *Node) []*Node {
		return []*Node{b.gradMul(g, n.Args[1]), b.gradMul(g, n.Args[0])}
	},
	OpDiv: func(b *Builder, n, g *Node) []*Node { // torch (div_tensor_other_backward): g/y, −g·((x/y)/y), no y·y to overflow
		x, y := n.Args[0], n.Args[1]
		return []*Node{b.gradDiv(g, y), b.gradMul(b.Neg(g), b.Div(b.Div(x, y), y))}
	},
	OpMin: func(b *Builder, n, g *Node) []*Node { return minMaxVJP(b, n, g, OpGt, OpLe) },
	OpMax: func(b *Builder, n, g *Node) []*Node { return minMaxVJP(b, n, g, OpLt, OpGe) },
	OpLt:  noGrad, OpLe: noGrad, OpGt: noGrad, OpGe: noGrad, OpEq: noGrad, OpNe: noGrad,
	OpWhere: func(b *Builder, n, g *Node) []*Node {
		zero := b.Const(0)
		return []*Node{nil, b.Where(n.Args[0], g, zero), b.Where(n.Args[0], zero, g)}
	},
	OpCustomGrad: func(b *Builder, n, g *Node) []*Node { return []*Node{nil, b.gradMul(g, n.Args[2]), nil} },
	OpSum:        func(b *Builder, n, g *Node) []*Node { return []*Node{g} },
	OpMean: func(b *Builder, n, g *Node) []*Node {
		return []*Node{b.Div(g, b.Const(float64(n.Args[0].Shape.Numel()/n.Shape.Numel())))}
	},
	OpLogSumExp: func(b *Builder, n, g *Node) []*Node { // torch: g·exp(x − logsumexp)
		return []*Node{b.gradMul(g, b.Exp(b.Sub(n.Args[0], n)))}
	},
	// amax/amin: the gradient is shared evenly by the maximal elements.
	OpRMax: func(b *Builder, n, g *Node) []*Node { return extremeVJP(b, n, g) },
	OpRMin: func(b *Builder, n, g *Node) []*Node { return extremeVJP(b, n, g) },
	OpVar: func(b *Builder, n, g *Node) []*Node { // g·2(x − mean)/(n − correction)
		x := n.Args[0]
		cnt := float64(x.Shape.Numel()/n.Shape.Numel() - n.Corr)
		return []*Node{b.gradMul(g, b.Div(b.Mul(b.Const(2), b.Sub(x, b.Mean(x, n.Axes...))), b.Const(cnt)))}
	},
	OpStd: func(b *Builder, n, g *Node) []*Node { // g·(x − mean)/((n − correction)·std)
		x := n.Args[0]
		cnt := float64(x.Shape.Numel()/n.Shape.Numel() - n.Corr)
		return []*Node{b.gradMul(g, b.Div(b.Sub(x, b.Mean(x, n.Axes...)), b.Mul(b.Const(cnt), n)))}
	},
	OpArgMax: noGrad,
	// A scan or shift carries no gradient in any stage: TorchRL's estimators run on detached
	// critic parameters. Reaching one is an error, reported by the pass.
	OpScan:      unsupported,
	OpShiftNext: unsupported,
	OpGather: func(b *Builder, n, g *Node) []*Node { // a one-hot scatter along the axis
		x, idx, axis := n.Args[0], n.Args[1], n.Axes[0]
		return []*Node{b.Where(b.Eq(b.Iota(axis, false), idx), g, b.Const(0)).withShape(b, x.Shape), nil}
	},
}

// gradMul is the chain rule's g·d where d is a local derivative: 0 where g is exactly 0,
// whatever d is. A gradient is exactly 0 where a where, clamp or min did not take a branch
// (or a mask dropped an element); the derivative of that branch can still overflow in
// float32 where TorchRL's float64 autograd has a finite value — exp(100) for a clipped
// ratio, 1/x for an x that underflowed — and 0·inf would make the gradient NaN. So a float32
// gradient is the float64 one rounded: 0 where the branch is not taken, the signed limit
// (±inf) where it is taken and overflows (SEMANTICS.md §11.19). A NaN g stays NaN. A d that
// cannot be non-finite unless an input is (an input, a constant, a comparison) needs no
// guard: there float64 and float32 agree.
func (b *Builder) gradMul(g, d *Node) *Node { return b.guarded(OpMul, g, d) }

// gradDiv is g/d with gradMul's rule: 0 where g is 0 (d may have underflowed to 0 in float32,
// as exp(−200), where float64's 0/d is 0).
func (b *Builder) gradDiv(g, d *Node) *Node { return b.guarded(OpDiv, g, d) }

// guarded is op(g, d), or g itself where g is 0, unless d is exact or bounded (MarkBounded;
// a divisor only when its bound excludes 0, which the mark does not say, so never) or g a
// nonzero constant.
func (b *Builder) guarded(op Op, g, d *Node) *Node {
	if exact(d) || op == OpMul && b.bounded[d] || g.IsScalarConst() && g.Value[0] != 0 {
		return b.elem(op, g, d)
	}
	return b.Where(b.Ne(g, b.Const(0)), b.elem(op, g, d), g)
}

// exact reports whether n is non-finite only where an input is: it is an input or a
// constant, a comparison, or a selection, sign or copy of such values. Anything else may
// overflow or underflow in float32 where float64 does not.
func exact(n *Node) bool {
	switch n.Op {
	case OpInput, OpConst, OpLt, OpLe, OpGt, OpGe, OpEq, OpNe, OpArgMax:
		return true
	case OpNeg, OpAbs, OpDetach, OpBroadcast, OpMin, OpMax:
		for _, a := range n.Args {
			if !exact(a) {
				return false
			}
		}
		return true
	case OpWhere:
		return exact(n.Args[1]) && exact(n.Args[2])
	}
	return false
}

func noGrad(b *Builder, n, g *Node) []*Node { return make([]*Node, len(n.Args)) }

func unsupported(b *Builder, n, g *Node) []*Node { panic(unsupportedOp{n}) }

// unsupportedOp is the panic of unsupported, which the autodiff pass turns into an error.
type unsupportedOp struct{ n *Node }

// Error says which node a gradient reached.
func (u unsupportedOp) Error() string {
	return fmt.Sprintf("a gradient reaches %s, which has none (scans and shifts run on detached values)", u.n)
}

// ApplyVJP runs op n's rule; err reports an op without one, or a gradient reaching a scan or
// shift.
func ApplyVJP(b *Builder, n, g *Node) (contribs []*Node, err error) {
	rule := vjps[n.Op]
	if rule == nil {
		return nil, fmt.Errorf("ir: %s has no gradient rule", n.Op)
	}
	defer func() {
		if p := recover(); p != nil {
			u, ok := p.(unsupportedOp)
			if !ok {
				panic(p)
			}
			contribs, err = nil, u
		}
	}()
	return rule(b, n, g), nil
}

// minMaxVJP is the gradient of min (loses = Gt, wins = Le) or max (Lt, Ge). TieFirst: to x
// where x wins or is NaN, else to y (torch.clamp, stack-min). Otherwise torch.minimum/
// maximum: to the winner, half to each on a tie, all of it to both where one is NaN.
func minMaxVJP(b *Builder, n, g *Node, loses, wins Op) []*Node {
	x, y := n.Args[0], n.Args[1]
	zero := b.Const(0)
	if n.TieFirst {
		take := b.Max(b.elem(wins, x, y), b.Ne(x, x)) // wins or x is NaN
		return []*Node{b.Where(take, g, zero), b.Where(take, zero, g)}
	}
	half := b.Mul(g, b.Const(0.5))
	tie := b.Eq(x, y)
	return []*Node{
		b.Where(b.elem(loses, x, y), zero, b.Where(tie, half, g)),
		b.Where(b.elem(wins, x, y), b.Where(tie, half, zero), g),
	}
}

// extremeVJP shares g evenly among the elements equal to the extreme (torch.amax).
func extremeVJP(b *Builder, n, g *Node) []*Node {
	x := n.Args[0]
	hit := b.Eq(x, n)
	return []*Node{b.Div(b.Mul(g, hit), b.Sum(hit, n.Axes...))}
}

// Sign is torch.sign: 1, −1, 0 at ±0, NaN at NaN (the gradient of |x|).
func (b *Builder) Sign(x *Node) *Node {
	one := b.Const(1)
	return b.Where(b.Gt(x, b.Const(0)), one, b.Where(b.Lt(x, b.Const(0)), b.Neg(one), b.Mul(x, b.Const(0))))
}

// Iota is the index along axis, 0, 1, ..., |axis|−1, or with reverse |axis|−1, ..., 0
// (OpIota: no backend materialises it).
func (b *Builder) Iota(axis string, reverse bool) *Node {
	return b.add(&Node{Op: OpIota, Axes: []string{axis}, Reverse: reverse, Shape: b.Shape(axis)})
}

// withShape broadcasts n onto shape when it has fewer dims (a gather's scatter of a lower-
// rank gradient).
func (n *Node) withShape(b *Builder, shape Shape) *Node {
	if n.Shape.Equal(shape) {
		return n
	}
	return b.Broadcast(n, shape)
}

// HasRule reports whether op has a gradient rule (a test checks every op has one).
func HasRule(op Op) bool { return vjps[op] != nil }
