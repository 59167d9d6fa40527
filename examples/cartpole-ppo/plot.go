package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plotCurve writes the learning curve to path (PNG): every finished episode's return (faint
// points, placed at the iteration's step count they finished in, spread evenly), the mean
// return of the last 100 episodes after each iteration, and the 475 that solves CartPole-v1.
func plotCurve(path string, curve []Stats, returns []float64, seed uint64) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("PPO on CartPole-v1 with a lossgen kernel (seed %d)", seed)
	p.X.Label.Text = "environment steps"
	p.Y.Label.Text = "return"
	p.Y.Min, p.Y.Max = 0, 520

	episodes := make(plotter.XYs, 0, len(returns))
	mean := make(plotter.XYs, 0, len(curve))
	prevSteps, prevEpisodes := 0, 0
	for _, s := range curve {
		n := s.Episodes - prevEpisodes
		for i := 0; i < n; i++ {
			x := float64(prevSteps) + float64(s.Steps-prevSteps)*float64(i+1)/float64(n)
			episodes = append(episodes, plotter.XY{X: x, Y: returns[prevEpisodes+i]})
		}
		mean = append(mean, plotter.XY{X: float64(s.Steps), Y: s.MeanReturn})
		prevSteps, prevEpisodes = s.Steps, s.Episodes
	}
	scatter, err := plotter.NewScatter(episodes)
	if err != nil {
		return err
	}
	scatter.GlyphStyle.Radius = vg.Points(1)
	scatter.GlyphStyle.Color = color.RGBA{R: 120, G: 160, B: 220, A: 255}
	line, err := plotter.NewLine(mean)
	if err != nil {
		return err
	}
	line.Width = vg.Points(2)
	line.Color = color.RGBA{R: 200, G: 40, B: 40, A: 255}
	threshold := plotter.NewFunction(func(float64) float64 { return solvedReturn })
	threshold.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(plotter.NewGrid(), scatter, line, threshold)
	p.Legend.Add("episode return", scatter)
	p.Legend.Add("mean of last 100 episodes", line)
	p.Legend.Add("solved (475)", threshold)
	p.Legend.Top, p.Legend.Left = false, false // bottom right, below the late episodes
	p.Title.Padding = vg.Points(6)
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 100, Label: "100"},
		{Value: 200, Label: "200"}, {Value: 300, Label: "300"}, {Value: 400, Label: "400"}, {Value: 500, Label: "500"}})
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}
