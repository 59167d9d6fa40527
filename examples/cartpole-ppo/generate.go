package main

// The loss kernel in loss/ is generated from ppo.yaml by lossgen (run from the lossgen module,
// so its generator's dependencies stay out of this module).
//go:generate go -C ../.. run ./cmd/lossgen generate -o examples/cartpole-ppo/loss examples/cartpole-ppo/ppo.yaml
