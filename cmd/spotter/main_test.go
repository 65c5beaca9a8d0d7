package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("task: t\nstart_url: ftp://x\nmodel: {turns: [{say: hi}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int // 0: no error
		wantOut  string
	}{
		{"version", []string{"version"}, 0, "spotter "},
		{"help", []string{"help"}, 0, "Usage:"},
		{"no command", nil, 2, ""},
		{"unknown command", []string{"teleport"}, 2, ""},
		{"run without a task", []string{"run"}, 2, ""},
		{"run a missing file", []string{"run", filepath.Join(dir, "nope.yaml")}, 2, ""},
		{"run a bad task", []string{"run", bad}, 2, ""},
		{"run with a file and --task", []string{"run", bad, "--task", "x"}, 2, ""},
		{"one-off without a provider", []string{"run", "--task", "x"}, 2, ""},
		{"batch without jobs", []string{"batch"}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(t.Context(), tt.args, &out, &errOut)
			code := 0
			if err != nil {
				code = 2
				var ee exitError
				if errors.As(err, &ee) {
					code = ee.code
				}
			}
			if code != tt.wantCode {
				t.Errorf("run(%q) exit code = %d (err %v), want %d", tt.args, code, err, tt.wantCode)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("run(%q) stdout = %q, want it to contain %q", tt.args, out.String(), tt.wantOut)
			}
		})
	}
}
