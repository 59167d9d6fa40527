package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestStepMatchesGymDynamics checks two steps from the upright rest state against Gymnasium's
// equations worked by hand. Pushing right (force 10) from rest: temp = 10/1.1 = 100/11,
// θ̈ = −temp/(0.5·(4/3 − 0.1/1.1)) = −(100/11)/(41/66) = −600/41, ẍ = temp − 0.05·θ̈/1.1 =
// 400/41. Euler moves the positions with the old velocities, so after step 1 x = θ = 0,
// ẋ = 0.02·400/41 = 8/41, θ̇ = −0.02·600/41 = −12/41; after step 2 x = 0.02·8/41 and
// θ = −0.02·12/41.
func TestStepMatchesGymDynamics(t *testing.T) {
	e := NewCartPole(rand.New(rand.NewPCG(1, 2)))
	e.Reset()
	e.state = [obsDim]float64{}
	obs, r, term, trunc := e.Step(1)
	want := [obsDim]float64{0, 8.0 / 41, 0, -12.0 / 41}
	for i, w := range want {
		if math.Abs(e.state[i]-w) > 1e-15 || obs[i] != float32(w) {
			t.Errorf("step 1: state[%d] = %v (obs %v), want %v", i, e.state[i], obs[i], w)
		}
	}
	if r != 1 || term || trunc {
		t.Errorf("step 1: reward %v, terminated %v, truncated %v; want 1, false, false", r, term, trunc)
	}
	e.Step(1)
	if x, th := e.state[0], e.state[2]; math.Abs(x-0.02*8/41) > 1e-15 || math.Abs(th+0.02*12/41) > 1e-15 {
		t.Errorf("step 2: x = %v, θ = %v; want %v, %v", x, th, 0.02*8/41, -0.02*12/41)
	}
}

// TestTermination checks the episode ends: terminated when θ passes 12° or x passes ±2.4
// (with reward 1 for that step, as Gymnasium gives), truncated at the 500th step.
func TestTermination(t *testing.T) {
	e := NewCartPole(rand.New(rand.NewPCG(1, 2)))
	e.Reset()
	e.state = [obsDim]float64{0, 0, 12 * math.Pi / 180, 1} // θ̇ > 0 carries θ past 12°
	if _, r, term, _ := e.Step(1); !term || r != 1 {
		t.Errorf("θ past 12°: terminated %v, reward %v; want true, 1", term, r)
	}
	e.Reset()
	e.state = [obsDim]float64{-2.4, -1, 0, 0}
	if _, _, term, _ := e.Step(0); !term {
		t.Error("x past −2.4: not terminated")
	}
	e.Reset()
	for i := 1; i <= maxEpisodeSteps; i++ {
		e.state = [obsDim]float64{} // hold it upright
		_, _, term, trunc := e.Step(i % 2)
		if term || trunc != (i == maxEpisodeSteps) {
			t.Fatalf("step %d: terminated %v, truncated %v", i, term, trunc)
		}
	}
}

// TestReset checks reset states lie in [-0.05, 0.05)⁴ and come from the seed.
func TestReset(t *testing.T) {
	a, b := NewCartPole(rand.New(rand.NewPCG(7, 7))), NewCartPole(rand.New(rand.NewPCG(7, 7)))
	for range 100 {
		oa, ob := a.Reset(), b.Reset()
		if oa != ob {
			t.Fatalf("same seed, different resets: %v, %v", oa, ob)
		}
		for _, v := range oa {
			if v < -0.05 || v >= 0.05 {
				t.Fatalf("reset observation %v outside [-0.05, 0.05)", oa)
			}
		}
	}
}
