package ir

import "testing"

// A where that selects nothing new is not a node: where(c, x, x) is x (broadcast to the
// condition's dims), a nested where on the same condition keeps only the branch it takes,
// and a where on another condition stays.
func TestWhereSimplifies(t *testing.T) {
	b := NewBuilder(F32, []Dim{{Name: "B", Size: 4}, {Name: "A", Size: 3}}, []string{"B"})
	c := b.Input(Input{Key: "c", Name: "c", Kind: Bool, Shape: b.Shape("B")})
	d := b.Input(Input{Key: "d", Name: "d", Kind: Bool, Shape: b.Shape("B")})
	x := b.Input(Input{Key: "x", Name: "x", Kind: Float, Shape: b.Shape("B")})
	y := b.Input(Input{Key: "y", Name: "y", Kind: Float, Shape: b.Shape("B")})
	z := b.Input(Input{Key: "z", Name: "z", Kind: Float, Shape: b.Shape("B", "A")})
	zero := b.Const(0)

	if got := b.Where(c, x, x); got != x {
		t.Errorf("where(c, x, x) = %s, want x", got)
	}
	inner := b.Where(c, x, zero)
	if got, want := b.Where(c, inner, zero), inner; got != want {
		t.Errorf("where(c, where(c, x, 0), 0) = %s, want %s", got, want)
	}
	if got, want := b.Where(c, y, b.Where(c, x, zero)), b.Where(c, y, zero); got != want {
		t.Errorf("where(c, y, where(c, x, 0)) = %s, want %s", got, want)
	}
	// The inner where had z's dims: the result keeps them.
	got := b.Where(c, b.Where(c, x, z), y)
	if got.Op != OpBroadcast || !got.Shape.Equal(b.Shape("B", "A")) || got.Args[0] != b.Where(c, x, y) {
		t.Errorf("where(c, where(c, x, z[B A]), y) = %s %s, want where(c, x, y) broadcast to [B A]", got, got.Shape)
	}
	if got := b.Where(d, inner, zero); got.Args[1] != inner {
		t.Errorf("where(d, where(c, x, 0), 0) = %s: another condition must stay", got)
	}
}

// x·1 and 1·x are x (exact in IEEE arithmetic, NaN and ±0 included); x·2 and a scalar times
// a tensor of ones stay products.
func TestMulByOne(t *testing.T) {
	b := NewBuilder(F32, []Dim{{Name: "B", Size: 4}}, []string{"B"})
	x := b.Input(Input{Key: "x", Name: "x", Kind: Float, Shape: b.Shape("B")})
	one := b.Const(1)
	if got := b.Mul(x, one); got != x {
		t.Errorf("x·1 = %s, want x", got)
	}
	if got := b.Mul(one, x); got != x {
		t.Errorf("1·x = %s, want x", got)
	}
	if got := b.Mul(x, b.Const(2)); got.Op != OpMul {
		t.Errorf("x·2 = %s, want a product", got)
	}
	if got := b.Mul(one, one); !got.IsScalarConst() || got.Value[0] != 1 {
		t.Errorf("1·1 = %s, want the constant 1", got)
	}
}
