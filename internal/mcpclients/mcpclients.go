// Package mcpclients runs the MCP clients from npm that Spotter's tests
// drive its MCP servers with (the MCP Inspector's CLI, the official
// conformance suite, the official TypeScript SDK, ajv), as a user would.
// install.sh installs them, with the Node.js 22 they need, once; .ci/deps
// runs it, and Dir runs it again (it returns at once when they are there).
package mcpclients

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Scripts run with the installed packages: they are written into the
// install directory, where Node resolves the packages.
var (
	//go:embed ajv-strict.mjs
	AJVStrict string
	//go:embed ts-client.mjs
	TSClient string
)

var (
	once   sync.Once
	dir    string
	dirErr error
)

// Dir returns the directory the clients are installed in, installing
// them first when they are not; it fails t when they cannot be.
func Dir(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		var out, errb bytes.Buffer
		cmd := exec.Command(filepath.Join(filepath.Dir(file), "install.sh"))
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			dirErr = fmt.Errorf("install.sh: %v\n%s", err, errb.String())
			return
		}
		dir = strings.TrimSpace(out.String())
	})
	if dirErr != nil {
		t.Fatal(dirErr)
	}
	return dir
}

// Node returns the path of Node.js 22.
func Node(t testing.TB) string { return filepath.Join(Dir(t), "node_modules", ".bin", "node") }

// Bin returns the path of an installed package's program, such as
// "mcp-inspector" or "conformance".
func Bin(t testing.TB, name string) string {
	return filepath.Join(Dir(t), "node_modules", ".bin", name)
}

// Script writes script into the install directory as name and returns its
// path.
func Script(t testing.TB, name, script string) string {
	t.Helper()
	p := filepath.Join(Dir(t), name)
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Command returns a command that runs a program with Node.js 22 first on
// its PATH (npm's programs start with "#!/usr/bin/env node").
func Command(ctx context.Context, t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(Node(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = Dir(t)
	return cmd
}

// Conformance runs the official conformance suite's server scenarios
// against the MCP endpoint url, with the expected failures (and their
// reasons) of mcp/conformance-expected.yaml, and fails t unless the run
// passes: a scenario that fails and is not listed, or one listed that
// passes, fails it.
func Conformance(ctx context.Context, t testing.TB, url string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	expected := filepath.Join(filepath.Dir(file), "..", "..", "mcp", "conformance-expected.yaml")
	cmd := Command(ctx, t, Bin(t, "conformance"), "server", "--url", url, "--expected-failures", expected, "-o", t.TempDir())
	out, err := cmd.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	if err != nil {
		t.Fatalf("conformance server --url %s: %v\n%s", url, err, summary)
	}
	t.Logf("%s", summary)
}
