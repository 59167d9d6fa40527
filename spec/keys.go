package spec

// resolveKeys applies the registry's default data keys to the keys a spec wrote; written maps
// a logical key to its nested key, with a nil value for an explicit null (absent from the
// data). A key derived from another (NextOf) follows that key's renaming unless it is
// written itself.
func resolveKeys(reg Registry, written map[string][]string) map[string][]string {
	keys := map[string][]string{}
	for _, k := range reg.Keys() {
		def, _ := reg.Key(k)
		keys[k] = def.Default
	}
	for k, v := range written {
		keys[k] = v
	}
	for _, k := range reg.Keys() {
		def, _ := reg.Key(k)
		if _, ok := written[k]; !ok && def.NextOf != "" && keys[def.NextOf] != nil {
			keys[k] = append([]string{"next"}, keys[def.NextOf]...)
		}
	}
	return keys
}
