package main

import (
	"bytes"
	"errors"
	"flag"
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

// The help lists every command the binary dispatches, and each command's
// own -h works.
func TestHelpListsEveryCommand(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"--help"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "batch", "test", "serve", "mcp", "bench", "version"} {
		if !strings.Contains(out.String(), "spotter "+cmd) {
			t.Errorf("--help does not list %q:\n%s", cmd, out.String())
		}
		if cmd == "version" {
			continue
		}
		var o, e bytes.Buffer
		err := run(t.Context(), []string{cmd, "-h"}, &o, &e)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("spotter %s -h = %v", cmd, err)
		}
		if !strings.Contains(o.String()+e.String(), "Usage: spotter "+cmd) {
			t.Errorf("spotter %s -h printed %q, want its usage", cmd, o.String()+e.String())
		}
	}
}

// A second run into the same --out replaces the first and says so; a
// folder that holds something else is refused and left as it is.
func TestReplaceRun(t *testing.T) {
	dir := t.TempDir()
	prev := filepath.Join(dir, "run")
	if err := os.MkdirAll(filepath.Join(prev, "shots"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"events.jsonl", "report.html", "shots/f0001.png"} {
		if err := os.WriteFile(filepath.Join(prev, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errOut bytes.Buffer
	if err := replaceRun(prev, &errOut); err != nil {
		t.Fatalf("replaceRun(a previous run) = %v", err)
	}
	if _, err := os.Stat(prev); !os.IsNotExist(err) || !strings.Contains(errOut.String(), "replacing the previous run") {
		t.Errorf("the previous run is still there (%v) or stderr did not say so: %q", err, errOut.String())
	}
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceRun(other, &errOut); err == nil {
		t.Error("replaceRun(a folder of other files) = nil, want a refusal")
	}
	if _, err := os.Stat(filepath.Join(other, "notes.txt")); err != nil {
		t.Errorf("the other folder's file is gone: %v", err)
	}
	for _, d := range []string{filepath.Join(dir, "new"), t.TempDir()} {
		if err := replaceRun(d, &errOut); err != nil {
			t.Errorf("replaceRun(%s) = %v, want nil for a new or empty folder", d, err)
		}
	}
}
