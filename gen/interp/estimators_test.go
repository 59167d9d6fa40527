package interp_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The value estimators against SEMANTICS.md §9.2–9.3 (values computed by hand and with
// TorchRL v0.11.0's functionals, double hyper-parameters) and against TorchRL's loops written
// out independently below (functional.py td1_return_estimate, td_lambda_return_estimate,
// vtrace_advantage_estimate), on random rows with every done/terminated pattern.

func estSpec(typ, extra string, n, t int) string {
	return fmt.Sprintf(`
package: e
dtype: float64
param_dtype: float64
dims: {N: %d, T: %d}
batch: [N, T]
estimator: {type: %s, gamma: 0.9%s}
`, n, t, typ, extra)
}

// §9.2 case B: truncated at t = 2 (done, not terminated).
var caseB = with(gae92, "next.terminated", []float64{0, 0, 0, 0, 0})

// without returns m without key k (TD(0) reads no done flags).
func without(m map[string][]float64, k string) map[string][]float64 {
	out := map[string][]float64{}
	for kk, v := range m {
		if kk != k {
			out[kk] = v
		}
	}
	return out
}

func TestTD0HandValues(t *testing.T) {
	out := eval(t, estSpec("td0", "", 1, 5), without(gae92, "next.done"))
	near(t, []float64{1.36, 0.27, 2.0, -0.91, 1.04}, out["value_target"], hand, "TD0 target (A)")
	near(t, []float64{1.36 - 0.5, 0.27 - 0.4, 2.0 - 0.3, -0.91 - 0.2, 1.04 - 0.1}, out["advantage"], hand, "TD0 advantage (A)")
	out = eval(t, estSpec("td0", "", 1, 5), without(caseB, "next.done"))
	near(t, []float64{1.36, 0.27, 2.81, -0.91, 1.04}, out["value_target"], hand, "TD0 target (B)")
}

func TestTD1HandValues(t *testing.T) {
	out := eval(t, estSpec("td1", "", 1, 5), gae92)
	near(t, []float64{2.62, 1.8, 2.0, -0.064, 1.04}, out["value_target"], hand, "TD1 target (A)")
	out = eval(t, estSpec("td1", "", 1, 5), caseB)
	near(t, []float64{3.2761, 2.529, 2.81, -0.064, 1.04}, out["value_target"], hand, "TD1 target (B)")
	near(t, []float64{3.2761 - 0.5, 2.529 - 0.4, 2.81 - 0.3, -0.064 - 0.2, 1.04 - 0.1}, out["advantage"], hand, "TD1 advantage (B)")
}

func TestTDLambdaHandValues(t *testing.T) {
	out := eval(t, estSpec("td_lambda", ", lmbda: 0.8", 1, 5), gae92)
	near(t, []float64{2.14768, 1.494, 2.0, -0.2332, 1.04}, out["value_target"], hand, "TD(λ) target (A)")
	out = eval(t, estSpec("td_lambda", ", lmbda: 0.8", 1, 5), caseB)
	near(t, []float64{2.567584, 2.0772, 2.81, -0.2332, 1.04}, out["value_target"], hand, "TD(λ) target (B)")
}

// SEMANTICS.md §9.3 inputs: log_mu (sample_log_prob) all −1.
var vtrace93 = map[string][]float64{
	"sample_log_prob":  {-1, -1, -1, -1},
	"log_prob":         {-1.5, -0.6, -1.0, -0.2},
	"next.reward":      {1.0, 0.0, -0.5, 2.0},
	"state_value":      {0.2, 0.4, 0.1, 0.3},
	"next.state_value": {0.4, 0.1, 0.3, 0.5},
	"next.done":        {0, 0, 0, 0},
	"next.terminated":  {0, 0, 0, 0},
}

func TestVTraceHandValues(t *testing.T) {
	src := estSpec("vtrace", "", 1, 4)
	out := eval(t, src, vtrace93)
	near(t, []float64{1.5228736954, 1.5345, 1.705, 2.45}, out["value_target"], 1e-10, "vs (A)")
	near(t, []float64{1.3228736954, 1.1345, 1.605, 2.15}, out["advantage"], 1e-10, "advantage (A)")

	done := []float64{0, 1, 0, 0}
	b := with(with(vtrace93, "next.done", done), "next.terminated", done)
	out = eval(t, src, b)
	near(t, []float64{0.6852245278, 0.0, 1.705, 2.45}, out["value_target"], 1e-10, "vs (B)")
	near(t, []float64{0.4852245278, -0.4, 1.605, 2.15}, out["advantage"], 1e-10, "advantage (B)")

	out = eval(t, estSpec("vtrace", ", rho_thresh: 1.2, c_thresh: 0.8", 1, 4), vtrace93)
	near(t, []float64{1.3009045812, 1.127872, 1.6276, 2.88}, out["value_target"], 1e-10, "vs (C)")
	near(t, []float64{1.1009045812, 1.277808, 1.992, 2.58}, out["advantage"], 1e-10, "advantage (C)")

	// D: truncated at t = 1. vs is TorchRL's; the advantage at the truncation is the textbook
	// R₁ + γV'₁ − V₁ = −0.31 (§11.7), not TorchRL's 1.1345, which reads vs₂ of the next episode.
	out = eval(t, src, with(vtrace93, "next.done", done))
	near(t, []float64{0.7343535112, 0.09, 1.705, 2.45}, out["value_target"], 1e-10, "vs (D)")
	near(t, []float64{0.5343535112, -0.31, 1.605, 2.15}, out["advantage"], 1e-10, "advantage (D)")
}

// Independent derivations: TorchRL's loops, literally, in float64.

type row struct{ r, v, vn, done, term, lp, lpOld []float64 }

func td1Loop(x row, gamma float64) []float64 {
	T := len(x.r)
	out := make([]float64, T)
	g := x.vn[T-1]
	for i := T - 1; i >= 0; i-- {
		dnt := x.done[i] * (1 - x.term[i])
		g = x.r[i] + gamma*(1-x.term[i])*((1-dnt)*g+dnt*x.vn[i])
		out[i] = g
	}
	return out
}

func tdLambdaLoop(x row, gamma, lmbda float64) []float64 {
	T := len(x.r)
	out := make([]float64, T)
	nv := make([]float64, T)
	for i := range nv {
		nv[i] = x.vn[i] * (1 - x.term[i])
	}
	g := nv[T-1]
	for i := T - 1; i >= 0; i-- {
		g = g*(1-x.done[i]) + nv[i]*x.done[i]
		g = x.r[i] + gamma*((1-lmbda)*nv[i]+lmbda*g)
		out[i] = g
	}
	return out
}

// vtraceLoop is vtrace_advantage_estimate with lossgen's textbook value at a truncation
// inside the row (§11.7).
func vtraceLoop(x row, gamma, rhoBar, cBar float64) (adv, vs []float64) {
	T := len(x.r)
	adv, vs = make([]float64, T), make([]float64, T)
	rhoC, c, delta := make([]float64, T), make([]float64, T), make([]float64, T)
	for i := range x.r {
		rho := math.Exp(x.lp[i] - x.lpOld[i])
		rhoC[i], c[i] = math.Min(rho, rhoBar), math.Min(rho, cBar)
		delta[i] = rhoC[i] * (x.r[i] + gamma*(1-x.term[i])*x.vn[i] - x.v[i])
	}
	acc := 0.0
	for i := T - 1; i >= 0; i-- {
		acc = delta[i] + gamma*(1-x.done[i])*c[i]*acc
		vs[i] = acc + x.v[i]
	}
	for i := range x.r {
		next := x.vn[T-1]
		if i < T-1 {
			next = vs[i+1]
		}
		if x.done[i] == 1 && x.term[i] == 0 {
			next = x.vn[i]
		}
		adv[i] = rhoC[i] * (x.r[i] + gamma*(1-x.term[i])*next - x.v[i])
	}
	return adv, vs
}

// randomRows draws n rows of T steps, rows cycling through: no flags; a terminal in the
// middle; a truncation in the middle; terminated without done; done on the last step; done
// at every step, alternately terminated; random flags.
func randomRows(n, T int, seed uint64) map[string][]float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	in := map[string][]float64{}
	for _, k := range []string{"next.reward", "state_value", "next.state_value", "next.done", "next.terminated", "log_prob", "sample_log_prob"} {
		in[k] = make([]float64, n*T)
	}
	for i := 0; i < n; i++ {
		for t := 0; t < T; t++ {
			k := i*T + t
			in["next.reward"][k] = r.NormFloat64()
			in["state_value"][k] = 2 * r.NormFloat64()
			in["next.state_value"][k] = 2 * r.NormFloat64()
			in["sample_log_prob"][k] = -3 * r.Float64()
			in["log_prob"][k] = in["sample_log_prob"][k] + 0.5*r.NormFloat64()
			set := func(done, term bool) {
				in["next.done"][k], in["next.terminated"][k] = b2f(done), b2f(term)
			}
			switch i % 7 {
			case 1:
				set(t == T/2, t == T/2)
			case 2:
				set(t == T/2, false)
			case 3:
				set(false, t == T/2)
			case 4:
				set(t == T-1, t == T-1)
			case 5:
				set(true, t%2 == 0)
			case 6:
				d := r.Float64() < 0.3
				set(d, d && r.Float64() < 0.5)
			}
		}
	}
	return in
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func rowOf(in map[string][]float64, i, T int) row {
	s := func(k string) []float64 { return in[k][i*T : (i+1)*T] }
	return row{s("next.reward"), s("state_value"), s("next.state_value"), s("next.done"), s("next.terminated"), s("log_prob"), s("sample_log_prob")}
}

// The scans agree with TorchRL's loops on every pattern of flags, T = 1 included.
func TestEstimatorsMatchTorchRLLoops(t *testing.T) {
	for _, T := range []int{1, 2, 7} {
		const n = 14
		in := randomRows(n, T, uint64(T))
		sub := func(keys ...string) map[string][]float64 {
			out := map[string][]float64{}
			for _, k := range keys {
				out[k] = in[k]
			}
			return out
		}
		base := []string{"next.reward", "state_value", "next.state_value", "next.done", "next.terminated"}
		td1 := eval(t, estSpec("td1", "", n, T), sub(base...))
		tdl := eval(t, estSpec("td_lambda", ", lmbda: 0.7", n, T), sub(base...))
		vt := eval(t, estSpec("vtrace", ", rho_thresh: 1.3, c_thresh: 0.9", n, T), sub(append(base, "log_prob", "sample_log_prob")...))
		for i := 0; i < n; i++ {
			x := rowOf(in, i, T)
			what := fmt.Sprintf("T=%d row %d", T, i)
			near(t, td1Loop(x, 0.9), td1["value_target"][i*T:(i+1)*T], hand, "TD(1) "+what)
			near(t, tdLambdaLoop(x, 0.9, 0.7), tdl["value_target"][i*T:(i+1)*T], hand, "TD(λ) "+what)
			adv, vs := vtraceLoop(x, 0.9, 1.3, 0.9)
			near(t, vs, vt["value_target"][i*T:(i+1)*T], hand, "V-trace vs "+what)
			near(t, adv, vt["advantage"][i*T:(i+1)*T], hand, "V-trace advantage "+what)
		}
	}
}

// time_dim: a time-major [T, N] batch gives the transpose of the [N, T] results.
func TestTimeMajor(t *testing.T) {
	const n, T = 5, 6
	in := randomRows(n, T, 9)
	tm := map[string][]float64{}
	for k, v := range in {
		w := make([]float64, len(v))
		for i := 0; i < n; i++ {
			for s := 0; s < T; s++ {
				w[s*n+i] = v[i*T+s]
			}
		}
		tm[k] = w
	}
	for _, typ := range []string{"gae", "td1", "td_lambda", "vtrace"} {
		extra := map[string]string{"gae": ", lmbda: 0.8", "td_lambda": ", lmbda: 0.8"}[typ]
		keys := []string{"next.reward", "state_value", "next.state_value", "next.done", "next.terminated"}
		if typ == "vtrace" {
			keys = append(keys, "log_prob", "sample_log_prob")
		}
		pick := func(m map[string][]float64) map[string][]float64 {
			out := map[string][]float64{}
			for _, k := range keys {
				out[k] = m[k]
			}
			return out
		}
		want := eval(t, estSpec(typ, extra, n, T), pick(in))
		src := fmt.Sprintf("\npackage: e\ndtype: float64\nparam_dtype: float64\ndims: {T: %d, N: %d}\nbatch: [T, N]\nestimator: {type: %s, gamma: 0.9%s, time_dim: T}\n", T, n, typ, extra)
		got := eval(t, src, pick(tm))
		for _, o := range []string{"advantage", "value_target"} {
			for i := 0; i < n; i++ {
				for s := 0; s < T; s++ {
					if d := math.Abs(got[o][s*n+i] - want[o][i*T+s]); d > hand {
						t.Errorf("%s %s[t=%d, n=%d]: time-major %v, batch-major %v", typ, o, s, i, got[o][s*n+i], want[o][i*T+s])
					}
				}
			}
		}
	}
}
