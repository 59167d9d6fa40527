// Package generated holds the packages lossgen generates from spec/examples; CI regenerates
// them and fails on any difference, so they are always what the generator makes today.
//
// Regenerate with `go generate ./generated/...` (or `make generate`).
package generated

//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o clipppogae -golden ../golden/clipppogae ../spec/examples/clip_ppo_gae.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o clipppo -golden ../golden/clipppo ../spec/examples/clip_ppo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o gae -golden ../golden/gae ../spec/examples/gae.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o td0 -golden ../golden/td0 ../spec/examples/td0.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o td1 -golden ../golden/td1 ../spec/examples/td1.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o tdlambda -golden ../golden/tdlambda ../spec/examples/td_lambda.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o vtraceppo -golden ../golden/vtraceppo ../spec/examples/vtrace_ppo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o clipppocat -golden ../golden/clipppocat ../spec/examples/clip_ppo_categorical.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o klpenppo -golden ../golden/klpenppo ../spec/examples/klpen_ppo_normal.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o ppotanh -golden ../golden/ppotanh ../spec/examples/ppo_tanh_normal.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o cliptokens -golden ../golden/cliptokens ../spec/examples/clip_ppo_tokens.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o ppoheads -golden ../golden/ppoheads ../spec/examples/ppo_heads.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o iql -golden ../golden/iql ../spec/examples/iql.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o discreteiql -golden ../golden/discreteiql ../spec/examples/discrete_iql.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o qvalue -golden ../golden/qvalue ../spec/examples/qvalue.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o distqvalue -golden ../golden/distqvalue ../spec/examples/distributional_qvalue.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o klreward -golden ../golden/klreward ../spec/examples/kl_reward.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o klgaeppo -golden ../golden/klgaeppo ../spec/examples/kl_reward_gae_clip_ppo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o grpo -golden ../golden/grpo ../spec/examples/grpo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o dapo -golden ../golden/dapo ../spec/examples/dapo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o cispo -golden ../golden/cispo ../spec/examples/cispo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o dqn -golden ../golden/dqn ../spec/examples/dqn.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o doubledqn -golden ../golden/doubledqn ../spec/examples/double_dqn.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o discretecql -golden ../golden/discretecql ../spec/examples/discrete_cql.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o gspo -golden ../golden/gspo ../spec/examples/gspo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o grpostep -golden ../golden/grpostep ../spec/examples/mc_advantage_grpo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o distillation -golden ../golden/distillation ../spec/examples/distillation.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o sac -golden ../golden/sac ../spec/examples/sac.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o td3 -golden ../golden/td3 ../spec/examples/td3.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o ddpg -golden ../golden/ddpg ../spec/examples/ddpg.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o distdqn -golden ../golden/distdqn ../spec/examples/distributional_dqn.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o a2c -golden ../golden/a2c ../spec/examples/a2c.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o reinforce -golden ../golden/reinforce ../spec/examples/reinforce.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o discretesac -golden ../golden/discretesac ../spec/examples/discrete_sac.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o redq -golden ../golden/redq ../spec/examples/redq.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o cql -golden ../golden/cql ../spec/examples/cql.yaml
