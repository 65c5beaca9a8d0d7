package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A jobs file whose third job replays a cassette that is not there stops
// `spotter batch` before its first job: exit 2, the line and the file
// named, and nothing run.
func TestBatchFindsAMissingCassetteFirst(t *testing.T) {
	dir := t.TempDir()
	script := `"start_url":"about:blank","model":{"provider":"script","turns":[{"say":"done"}]}`
	jobs := strings.Join([]string{
		`{"id":"first",` + script + `}`,
		`{"id":"second",` + script + `}`,
		`{"id":"replay","start_url":"demo:/","model":{"provider":"anthropic","cassette":"cassettes/gone.json"}}`,
	}, "\n")
	file := filepath.Join(dir, "jobs.jsonl")
	if err := os.WriteFile(file, []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"batch", file, "--out", out, "--isolate", "none", "--progress", "json"}, &stdout, &stderr)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Fatalf("spotter batch = %v, want exit code 2", err)
	}
	for _, want := range []string{file + ": line 3:", "job replay", "cassettes/gone.json"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the batch directory exists (%v): a job ran before the missing cassette was found", err)
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout = %q, want no progress: no job may start", stdout.String())
	}
}

// --warm takes 0 or more; a negative size is refused in words, whatever
// --isolate says.
func TestWarmFlagRefusesNegative(t *testing.T) {
	for _, iso := range []string{"none", "local"} {
		_, sbx, err := openSandboxes(t.Context(), iso, 0, -2, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), "--warm -2") {
			t.Errorf("openSandboxes(%s, warm -2) = %v, want an error naming --warm", iso, err)
		}
		if sbx != nil {
			sbx.Close(t.Context())
		}
	}
}
