package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreCurrent fails when docs/policy.md or api/v1alpha1/zz_generated.default.yaml
// differ from what gendocs writes from the current types, doc comments, defaults and flags.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%v: run `make generate`", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `make generate` (go generate ./api/v1alpha1)", name)
		}
	}
}
