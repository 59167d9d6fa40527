package ir

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCamelCase(t *testing.T) {
	for in, want := range map[string][2]string{
		"next.reward":   {"nextReward", "NextReward"},
		"kl_approx":     {"klApprox", "KLApprox"},
		"ESS":           {"ess", "ESS"},
		"grad.log_prob": {"gradLogProb", "GradLogProb"},
		"min_q":         {"minQ", "MinQ"},
		"td0_return":    {"td0Return", "Td0Return"},
		"2x":            {"", ""},
	} {
		require.Equal(t, want[0], CamelCase(in, false), in)
		require.Equal(t, want[1], CamelCase(in, true), in)
	}
}

// TestIdentifiers checks each source of a name, the order they take precedence in, and that
// names stay unique and clear of what the caller reserves and Go's own.
func TestIdentifiers(t *testing.T) {
	b := NewBuilder(F32, []Dim{{Name: "N", Size: 4}}, []string{"N"})
	lp := b.Input(Input{Name: "log_prob", Shape: b.Shape("N")})
	slp := b.Input(Input{Name: "sample_log_prob", Shape: b.Shape("N")})
	lw := b.Note(b.Sub(lp, slp), "log_weight")
	ratio := b.Note(b.Exp(lw), "ratio")
	half := b.Const(0.5)
	c := b.Const(0.25)
	x := b.Sub(ratio, half)       // no name: v<ID>
	y := b.Note(b.Sub(x, c), "x") // a note another output takes
	z := b.Note(b.Sub(y, half), "in")
	m := b.Note(b.Sub(z, c), "max")
	b.Output("x", y, Metric, "", "")
	b.Output("gain", b.Note(b.Sub(m, half), "ratio"), Metric, "", "")
	ent := b.Input(Input{Name: "entropy", Shape: b.Shape("N")})
	b.Output("entropy", b.Mean(ent, "N"), Metric, "", "")
	names := Identifiers(b.Graph(), func(s string) bool { return s == "in" })
	want := map[*Node]string{lp: "logProb", slp: "sampleLogProb", lw: "logWeight", ratio: "ratio", half: "half",
		y: "x", z: "in2", m: "v" + strconv.Itoa(m.ID)}
	for n, w := range want {
		require.Equal(t, w, names[n.ID], n.String())
	}
	require.Equal(t, "c"+strconv.Itoa(c.ID), names[c.ID])
	require.Equal(t, "v"+strconv.Itoa(x.ID), names[x.ID])
	require.Equal(t, "gain", names[b.Graph().Output("gain").Node.ID], "an output's name goes before a note")
	require.Equal(t, "entropy", names[ent.ID])
	require.Equal(t, "meanEntropy", names[b.Graph().Output("entropy").Node.ID], "a reduction takes its op before a number")
}
