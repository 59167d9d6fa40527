package ptxgen

import "math"

// ptxOps is ir.ElemOps on PTX registers of the kernel's element type, or (wide) ir.RedOps
// on float64 registers, the reductions' states. Every float op carries an explicit rounding
// (.rn), so ptxas contracts nothing into an FMA.
type ptxOps struct {
	k    *kernel
	wide bool
}

// ops64 is ptxOps on float64 registers.
func (k *kernel) ops64() ptxOps { return ptxOps{k, true} }

func (o ptxOps) f64() bool { return o.wide || o.k.f64 }

func (o ptxOps) el() string {
	if o.wide {
		return o.k.fd()
	}
	return o.k.el()
}

func (o ptxOps) t() string {
	if o.wide {
		return "f64"
	}
	return o.k.t()
}

// Const is c as an immediate of the ops' type.
func (o ptxOps) Const(c float64) string {
	if o.wide {
		return immF64(c)
	}
	return o.k.imm(c)
}

// use sets x if it is a truth value not set yet (kernel.lazy), and returns it.
func (o ptxOps) use(x string) string {
	if o.k.lazy[x] {
		o.k.op("selp.f64 %s, %s, %s, %s", x, immF64(1), immF64(0), o.k.truth[x])
		delete(o.k.lazy, x)
	}
	return x
}

// useAll is use of each of xs: a description's results, which states and stores take.
func (o ptxOps) useAll(xs []string) []string {
	for _, x := range xs {
		o.use(x)
	}
	return xs
}

func (o ptxOps) un(op, x string) string {
	x = o.use(x)
	d := o.el()
	o.k.op("%s.%s %s, %s", op, o.t(), d, x)
	return d
}

func (o ptxOps) bin(op, x, y string) string {
	x, y = o.use(x), o.use(y)
	d := o.el()
	o.k.op("%s.%s %s, %s, %s", op, o.t(), d, x, y)
	return d
}

func (o ptxOps) cmp(op, x, y string) string {
	p, d := o.k.pred(), o.el()
	if px, ok := o.k.truth[x]; ok && o.wide && op == "eq" && y == o.Const(0) {
		o.k.op("not.pred %s, %s", p, px)
	} else {
		o.k.op("setp.%s.%s %s, %s, %s", op, o.t(), p, o.use(x), o.use(y))
	}
	return o.truthValue(p, d)
}

// truthValue is d as 1 where p holds, else 0: set now in the element type, on float64
// registers when first used (kernel.truth, kernel.lazy).
func (o ptxOps) truthValue(p, d string) string {
	if o.wide {
		o.k.truth[d], o.k.lazy[d] = p, true
		return d
	}
	o.k.op("selp.%s %s, %s, %s, %s", o.t(), d, o.Const(1), o.Const(0), p)
	return d
}

func (o ptxOps) minmax(name, x, y string) string {
	d := o.el()
	px, okx := o.k.truth[x]
	py, oky := o.k.truth[y]
	if o.wide && okx && oky { // a logical or (max) or and (min) of truth values
		p := o.k.pred()
		o.k.op("%s.pred %s, %s, %s", map[string]string{"max": "or", "min": "and"}[name], p, px, py)
		return o.truthValue(p, d)
	}
	x, y = o.use(x), o.use(y)
	if o.f64() {
		o.k.minmax64(name, d, x, y)
	} else {
		o.k.op("%s.NaN.f32 %s, %s, %s", name, d, x, y)
	}
	return d
}

func (o ptxOps) Neg(x string) string { return o.un("neg", x) }
func (o ptxOps) Abs(x string) string { return o.un("abs", x) }
func (o ptxOps) Exp(x string) string {
	x = o.use(x)
	if o.wide {
		return o.k.exp64(x)
	}
	return o.k.expEl(x)
}
func (o ptxOps) Log(x string) string {
	x = o.use(x)
	if o.wide {
		return o.k.log64(x)
	}
	return o.k.logEl(x)
}

func (o ptxOps) ExpM1MinusX(x string) string { return o.elCode(x, o.k.expm1MinusXEl) }
func (o ptxOps) Log1p(x string) string       { return o.elCode(x, o.k.log1pEl) }

// elCode runs el, code written for the kernel's element type, on x: on float64 registers
// (wide) as a float64 kernel's.
func (o ptxOps) elCode(x string, el func(string) string) string {
	x = o.use(x)
	if o.wide && !o.k.f64 {
		o.k.f64 = true
		defer func() { o.k.f64 = false }()
	}
	return el(x)
}
func (o ptxOps) Sqrt(x string) string { return o.un("sqrt.rn", x) }

// RoundF32 is x through a float32 register: cvt.rn to it and back (a float32 kernel's x).
func (o ptxOps) RoundF32(x string) string {
	x = o.use(x)
	d := o.el()
	if o.t() == "f64" {
		f := o.k.f32()
		o.k.op("cvt.rn.f32.f64 %s, %s", f, x)
		o.k.op("cvt.f64.f32 %s, %s", d, f)
		return d
	}
	o.k.op("mov.f32 %s, %s", d, x)
	return d
}
func (o ptxOps) Add(x, y string) string { return o.bin("add.rn", x, y) }
func (o ptxOps) Sub(x, y string) string { return o.bin("sub.rn", x, y) }
func (o ptxOps) Mul(x, y string) string { return o.bin("mul.rn", x, y) }
func (o ptxOps) Div(x, y string) string { return o.bin("div.rn", x, y) }
func (o ptxOps) Min(x, y string) string { return o.minmax("min", x, y) }
func (o ptxOps) Max(x, y string) string { return o.minmax("max", x, y) }
func (o ptxOps) Lt(x, y string) string  { return o.cmp("lt", x, y) }
func (o ptxOps) Le(x, y string) string  { return o.cmp("le", x, y) }
func (o ptxOps) Gt(x, y string) string  { return o.cmp("gt", x, y) }
func (o ptxOps) Ge(x, y string) string  { return o.cmp("ge", x, y) }
func (o ptxOps) Eq(x, y string) string  { return o.cmp("eq", x, y) }
func (o ptxOps) Ne(x, y string) string  { return o.cmp("neu", x, y) } // true for NaN, as Go's !=
func (o ptxOps) Where(c, x, y string) string {
	x, y = o.use(x), o.use(y)
	d := o.el()
	p, ok := o.k.truth[c]
	if !ok || !o.wide {
		p = o.k.pred()
		o.k.op("setp.neu.%s %s, %s, %s", o.t(), p, o.use(c), o.Const(0))
	}
	o.k.op("selp.%s %s, %s, %s, %s", o.t(), d, x, y, p)
	return d
}

// minmax64 is Go's min/max for float64: NaN if either is NaN (PTX's min.f64 returns the
// other operand).
func (k *kernel) minmax64(name, d, a, b string) {
	p := k.pred()
	k.op("setp.nan.f64 %s, %s, %s", p, a, b)
	k.op("%s.f64 %s, %s, %s", name, d, a, b)
	k.op("selp.f64 %s, %s, %s, %s", d, immF64(math.NaN()), d, p)
}
