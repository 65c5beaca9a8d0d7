package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestTestAndMCPExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("task: t\nstart_url: demo:/\nmodel: {turns: [{say: hi}]}\nchecks: [{text: a, url: b}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"test without paths", []string{"test"}},
		{"test a missing path", []string{"test", filepath.Join(dir, "nope")}},
		{"test a bad file", []string{"test", bad, "--out", filepath.Join(dir, "out")}},
		{"test with both replay flags", []string{"test", bad, "--replay", "--record-replay"}},
		{"test with an unknown flag", []string{"test", "--colour"}},
		{"mcp on a public address", []string{"mcp", "--http", "0.0.0.0:8931"}},
		{"mcp with a bad viewport", []string{"mcp", "--viewport", "big"}},
		{"mcp with arguments", []string{"mcp", "extra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(t.Context(), tt.args, &out, &errOut)
			var ee exitError
			if !errors.As(err, &ee) || ee.code != 2 {
				t.Errorf("run(%v) = %v, want exit code 2", tt.args, err)
			}
		})
	}
}
