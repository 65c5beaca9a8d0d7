package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `spotter test` reads every file before the first test runs: a second
// file with a missing cassette or a bad target stops the suite with exit
// code 2, naming the file, and no test runs.
func TestTestPreflight(t *testing.T) {
	dir := t.TempDir()
	good := "name: good\ntask: t\nstart_url: \"demo:/\"\nmodel: {turns: [{say: PASS}]}\n"
	tests := []struct {
		name, file, want string
	}{
		{"missing cassette", "task: t\nstart_url: \"demo:/\"\nmodel: {provider: anthropic, cassette: cassettes/gone.json}\n",
			"model.cassette: load cassette: open "},
		{"target on a keypress", "task: t\nstart_url: \"demo:/\"\nmodel: {turns: [{actions: [{type: keypress, keys: [Enter], target: Go}]}]}\n",
			"model.turns[0].actions[0]: a target is for one-point pointer actions"},
		{"target and coordinates", "task: t\nstart_url: \"demo:/\"\nmodel: {turns: [{actions: [{type: click, x: 1, y: 2, target: Go}]}]}\n",
			"a target or x and y, not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "a-good.yaml"), []byte(good), 0o644); err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(sub, "b-bad.yaml")
			if err := os.WriteFile(bad, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(sub, "out")
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), []string{"test", sub, "--out", out}, &stdout, &stderr)
			var ee exitError
			if !errors.As(err, &ee) || ee.code != 2 {
				t.Fatalf("spotter test = %v, want exit code 2", err)
			}
			if !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to name %s and contain %q", err, bad, tt.want)
			}
			if strings.Contains(stdout.String(), "=== RUN") {
				t.Errorf("stdout = %q: a test ran before the bad file was found", stdout.String())
			}
		})
	}
}
