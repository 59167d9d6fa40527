package spec

import "sort"

// DefaultKeys maps each logical key to its default nested data key.
//
// The first group are TorchRL's tensor_keys (PPOLoss._AcceptedKeys and the value estimators'
// keys, torchrl/objectives/ppo.py and value/advantages.py), written as full data paths as in
// SPEC.md: TorchRL's reward key "reward" is read under "next", so its path is [next, reward].
// TorchRL's sample_log_prob default depends on tensordict's composite_lp_aggregate; lossgen
// uses "sample_log_prob", the name the issue and SPEC.md give.
//
// The second group names what TorchRL gets by calling networks inside the loss (lossgen takes
// those outputs as inputs): the current policy's log-prob and entropy, the stored value used
// for value clipping (TorchRL reads it from the same "state_value" key the critic overwrites),
// the reference policy's log-prob (kl_reward), action values (Q hooks, IQL).
//
// "next_value" defaults to [next] + the value key, as TorchRL's estimators read
// ("next", value_key).
var DefaultKeys = map[string][]string{
	"advantage":       {"advantage"},
	"value_target":    {"value_target"},
	"value":           {"state_value"},
	"sample_log_prob": {"sample_log_prob"},
	"action":          {"action"},
	"reward":          {"next", "reward"},
	"done":            {"next", "done"},
	"terminated":      {"next", "terminated"},

	"log_prob":                  {"log_prob"},
	"entropy":                   {"entropy"},
	"old_value":                 {"old_state_value"},
	"next_value":                nil, // derived from value unless given
	"ref_log_prob":              {"ref_log_prob"},
	"action_value":              {"action_value"},
	"state_action_value":        {"state_action_value"},
	"target_state_action_value": {"target_state_action_value"},
	"loc":                       {"loc"},
	"scale":                     {"scale"},
	"logits":                    {"logits"},
	"old_loc":                   {"old_loc"},
	"old_scale":                 {"old_scale"},
	"old_logits":                {"old_logits"},
}

// logicalKeys lists the accepted logical key names, sorted, for error messages.
func logicalKeys() []string {
	out := make([]string, 0, len(DefaultKeys))
	for k := range DefaultKeys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// resolveKeys applies the defaults to the keys a spec wrote; written maps a logical key to
// its nested key, with a nil value for an explicit null (absent from the data).
func resolveKeys(written map[string][]string, present map[string]bool) map[string][]string {
	keys := make(map[string][]string, len(DefaultKeys))
	for k, v := range DefaultKeys {
		keys[k] = v
	}
	for k, v := range written {
		keys[k] = v
	}
	if !present["next_value"] && keys["value"] != nil {
		keys["next_value"] = append([]string{"next"}, keys["value"]...)
	}
	return keys
}
