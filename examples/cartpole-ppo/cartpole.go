package main

import (
	"math"
	"math/rand/v2"
)

// CartPole-v1's constants, from Gymnasium's CartPoleEnv
// (gymnasium/envs/classic_control/cartpole.py, __init__) and its registration
// (gymnasium/envs/__init__.py: max_episode_steps=500, reward_threshold=475.0).
const (
	gravity        = 9.8
	massCart       = 1.0
	massPole       = 0.1
	totalMass      = massPole + massCart
	length         = 0.5 // half the pole's length
	poleMassLength = massPole * length
	forceMag       = 10.0
	tau            = 0.02 // seconds between state updates
	// thetaThreshold is 12°: the pole angle (radians) past which an episode terminates.
	thetaThreshold = 12 * 2 * math.Pi / 360
	// xThreshold is the cart position past which an episode terminates.
	xThreshold = 2.4
	// maxEpisodeSteps is CartPole-v1's TimeLimit: an episode is truncated after 500 steps.
	maxEpisodeSteps = 500
	// solvedReturn is CartPole-v1's reward_threshold: solved at this mean return over 100
	// consecutive episodes.
	solvedReturn = 475.0
)

// obsDim and numActions are CartPole's observation size and action count.
const (
	obsDim     = 4
	numActions = 2
)

// CartPole is a port of Gymnasium's CartPoleEnv with CartPole-v1's 500-step time limit:
// state (x, ẋ, θ, θ̇) in float64 as Gymnasium keeps it, Euler integration (its default
// kinematics_integrator), reward 1 for every step including the one that terminates, and
// observations rounded to float32 as Gymnasium returns them.
type CartPole struct {
	state [obsDim]float64
	steps int // steps taken in this episode
	rng   *rand.Rand
}

// NewCartPole returns an environment that draws its reset states from rng; call Reset
// before the first Step.
func NewCartPole(rng *rand.Rand) *CartPole {
	return &CartPole{rng: rng}
}

// Reset starts an episode from a state drawn uniformly from [-0.05, 0.05)⁴ (Gymnasium's
// reset) and returns its observation.
func (e *CartPole) Reset() [obsDim]float32 {
	for i := range e.state {
		e.state[i] = -0.05 + 0.1*e.rng.Float64()
	}
	e.steps = 0
	return e.obs()
}

// Step pushes the cart left (action 0) or right (action 1) for one tau and returns the
// observation after it, the reward, whether the episode terminated (the pole fell past 12° or
// the cart left ±2.4) and whether it was truncated (the 500th step; Gymnasium's TimeLimit
// reports both when the 500th step also terminates).
func (e *CartPole) Step(action int) (obs [obsDim]float32, reward float32, terminated, truncated bool) {
	x, xDot, theta, thetaDot := e.state[0], e.state[1], e.state[2], e.state[3]
	force := -forceMag
	if action == 1 {
		force = forceMag
	}
	cos, sin := math.Cos(theta), math.Sin(theta)
	temp := (force + poleMassLength*thetaDot*thetaDot*sin) / totalMass
	thetaAcc := (gravity*sin - cos*temp) / (length * (4.0/3.0 - massPole*cos*cos/totalMass))
	xAcc := temp - poleMassLength*thetaAcc*cos/totalMass
	// Euler: positions move with the old velocities.
	x += tau * xDot
	xDot += tau * xAcc
	theta += tau * thetaDot
	thetaDot += tau * thetaAcc
	e.state = [obsDim]float64{x, xDot, theta, thetaDot}
	e.steps++
	terminated = x < -xThreshold || x > xThreshold || theta < -thetaThreshold || theta > thetaThreshold
	truncated = e.steps >= maxEpisodeSteps
	return e.obs(), 1, terminated, truncated
}

func (e *CartPole) obs() [obsDim]float32 {
	var o [obsDim]float32
	for i, v := range e.state {
		o[i] = float32(v)
	}
	return o
}
