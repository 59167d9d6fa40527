// Package golden writes lossgen's golden cases and NumPy .npz files (lossgen golden -update,
// lossgen eval -out). What the files hold, and reading and comparing them, is the runtime
// module's package github.com/lossgen/lossgen/runtime/golden, which generated tests import;
// this package adds the writing, with github.com/sbinet/npyio, so that module needs nothing
// beyond the standard library.
package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/sbinet/npyio/npz"

	"github.com/lossgen/lossgen/runtime"
	rtgolden "github.com/lossgen/lossgen/runtime/golden"
)

// WriteNPZ writes arrays to path as "<name>.npy" entries in sorted name order (EncodeNPZ).
func WriteNPZ(path string, arrays map[string]rtgolden.Array) error {
	b, err := EncodeNPZ(arrays)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b, 0o644)
}

// EncodeNPZ is an .npz file of arrays, as "<name>.npy" entries in sorted name order.
func EncodeNPZ(arrays map[string]rtgolden.Array) ([]byte, error) {
	var buf bytes.Buffer
	w := npz.NewWriter(&buf)
	for _, n := range slices.Sorted(maps.Keys(arrays)) {
		if err := w.Write(n+".npy", shaped(arrays[n])); err != nil {
			w.Close()
			return nil, fmt.Errorf("%s: %w", n, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// shaped turns an Array into what npyio writes with the right shape: a scalar for shape [],
// a flat slice for one dim, a nested Go array for more.
func shaped(a rtgolden.Array) any {
	v := reflect.ValueOf(a.Data)
	if len(a.Shape) == 0 {
		return v.Index(0).Interface()
	}
	if len(a.Shape) == 1 {
		return a.Data
	}
	t := v.Type().Elem()
	for i := len(a.Shape) - 1; i >= 0; i-- {
		t = reflect.ArrayOf(a.Shape[i], t)
	}
	arr := reflect.New(t).Elem()
	flat := reflect.NewAt(reflect.ArrayOf(v.Len(), v.Type().Elem()), arr.Addr().UnsafePointer()).Elem()
	reflect.Copy(flat, v)
	return arr.Interface()
}

// WriteCase writes a case's files (CaseFiles) into dir, one after the other; lossgen golden
// -update writes a directory's cases as one transaction instead (cases.Update).
func WriteCase(dir string, c rtgolden.Case) error {
	files, err := CaseFiles(c)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CaseFiles is a case's files by name: a seeded case's recipe, or its inputs, and its
// expected outputs (a seeded case's as Case.Compact stores them).
func CaseFiles(c rtgolden.Case) (map[string][]byte, error) {
	want := map[string]rtgolden.Array{}
	sums := map[string]*rtgolden.Summary{}
	for name, s := range c.Summary {
		sums[name] = s
	}
	for name, a := range c.Want {
		if c.Recipe == nil || !rtgolden.NeedsSummary(a.Len()) {
			want[name] = a
		} else {
			sums[name] = rtgolden.Summarize(name, a.Shape, a.Float64s())
		}
	}
	for name, s := range sums {
		for part, x := range s.Arrays(name) {
			want[part] = x
		}
	}
	files := map[string][]byte{}
	if c.Recipe != nil {
		js, err := json.MarshalIndent(c.Recipe, "", "  ")
		if err != nil {
			return nil, err
		}
		files[c.Name+rtgolden.RecipeSuffix] = append(js, '\n')
	} else {
		b, err := EncodeNPZ(c.Inputs)
		if err != nil {
			return nil, fmt.Errorf("case %s: inputs: %w", c.Name, err)
		}
		files[c.Name+rtgolden.InSuffix] = b
	}
	b, err := EncodeNPZ(want)
	if err != nil {
		return nil, fmt.Errorf("case %s: outputs: %w", c.Name, err)
	}
	files[c.Name+rtgolden.WantSuffix] = b
	return files, nil
}

// StaleFormat lists, one line each, the seeded cases in dir stored in an older golden format
// than this lossgen writes (format 1: every input stored in <case>.in.npz; or a recipe of
// another format or generator), and nothing for a current directory or one that does not
// exist.
func StaleFormat(dir string) ([]string, error) {
	var out []string
	for _, name := range rtgolden.SeededCases {
		p := filepath.Join(dir, name+rtgolden.InSuffix)
		if fi, err := os.Stat(p); err == nil {
			out = append(out, fmt.Sprintf("%s: golden format 1 (the case's inputs stored whole, %d bytes); this lossgen writes format %d (a recipe, %s, and sampled outputs): run lossgen golden -update", p, fi.Size(), runtime.GoldenFormat, name+rtgolden.RecipeSuffix))
		}
		p = filepath.Join(dir, name+rtgolden.RecipeSuffix)
		if data, err := os.ReadFile(p); err == nil {
			if _, err := runtime.ParseRecipe(data); err != nil {
				out = append(out, fmt.Sprintf("%s: %v", p, err))
			}
		}
	}
	return out, nil
}
