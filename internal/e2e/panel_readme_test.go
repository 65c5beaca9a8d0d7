package e2e

// The README's first screen, run as a new user would: the built binary,
// each of its three commands as written there (a run and its report, a
// supervised session from `spotter serve`, an MCP client of `spotter
// mcp`), and the client configurations of docs/MCP.md.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// readmeCommands are the first screen's commands; the test fails if the
// README stops saying them.
var readmeCommands = []string{
	"git clone REPOSITORY-URL spotter",
	"make demo",
	"make test",
	"bin/spotter run examples/demo-anthropic.yaml --out runs/demo",
	"bin/spotter serve",
	`claude mcp add spotter -- "$PWD/bin/spotter" mcp --demo`,
}

func TestReadmeFirstScreenSaysTheCommands(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The first screen: up to the second section.
	first := string(b)
	if i := strings.Index(first, "\n## Running a task"); i > 0 {
		first = first[:i]
	}
	for _, c := range readmeCommands {
		if !strings.Contains(first, "\n"+c+"\n") {
			t.Errorf("README's quick start does not give the command %q on a line of its own", c)
		}
	}
	// Nothing that cannot work before the module is published, and one
	// name for the binary.
	for _, bad := range []string{"\ngo install", "\nspotter "} {
		if strings.Contains(first, bad) {
			t.Errorf("README's quick start has a command line that starts with %q", strings.TrimPrefix(bad, "\n"))
		}
	}
}

// The client configurations in docs/MCP.md are JSON, and each starts
// spotter mcp (or the image, or names serve's /mcp).
func TestMCPDocsConfigs(t *testing.T) {
	b, err := os.ReadFile("../../docs/MCP.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) < 5 {
		t.Fatalf("docs/MCP.md has %d JSON blocks, want the client configurations", len(blocks))
	}
	for _, m := range blocks {
		var v any
		if err := json.Unmarshal([]byte(m[1]), &v); err != nil {
			t.Errorf("docs/MCP.md block %q is not JSON: %v", m[1], err)
			continue
		}
		if !strings.Contains(m[1], `"mcp"`) && !strings.Contains(m[1], "/mcp") {
			t.Errorf("docs/MCP.md block %q starts no spotter mcp and names no /mcp", m[1])
		}
	}
	for _, want := range []string{"claude mcp add spotter -- spotter mcp", ".vscode/mcp.json", "~/.cursor/mcp.json",
		"claude_desktop_config.json", "Authorization: Bearer", "make build"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("docs/MCP.md does not say %q", want)
		}
	}
}

// The spotter binary, built once for the tests of this package that run
// it, into a directory TestMain removes.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// buildSpotter returns the spotter binary, building it on first use.
func buildSpotter(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "spotter-e2e-bin"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "spotter")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/spotter-harness/spotter/cmd/spotter").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// TestReadmeFirstScreen runs the three commands of the README's first
// screen with the built binary, from the repository's root.
func TestReadmeFirstScreen(t *testing.T) {
	integration(t)
	bin := buildSpotter(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a run and its report", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "runs", "demo")
		cmd := exec.CommandContext(t.Context(), bin, "run", "examples/demo-anthropic.yaml", "--out", out)
		cmd.Dir = root
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("spotter run: %v\n%s", err, b)
		}
		want := "report:  " + filepath.Join(out, "report.html")
		if !strings.Contains(string(b), want) && !strings.Contains(string(b), "report: "+filepath.Join(out, "report.html")) {
			t.Errorf("spotter run printed %q, want it to say where the report is (%s)", b, want)
		}
		html, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil || !bytes.Contains(html, []byte(`ol class="timeline"`)) {
			t.Errorf("report.html (%v) has no step timeline", err)
		}
	})

	t.Run("a supervised session", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		base, token, stderr := startServeBinary(t, bin)
		// The panel's "Built-in demo", as the panel sends it.
		body := `{"title": "demo", "messages": [{"role": "user", "content": "Check in Ada Lovelace"}],
			"model": {"provider": "demo"}, "approvals": {"supervise": "none"}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/session", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		stream, _ := io.ReadAll(resp.Body) // the stream ends with the turn
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(stream, []byte(`"stopReason":"end_turn"`)) {
			t.Errorf("PUT /session with the built-in demo: %s, stream:\n%s\nstderr:\n%s", resp.Status, stream, stderr.String())
		}
		if n := bytes.Count(stream, []byte("event: tool_result")); n < 6 {
			t.Errorf("the demo session answered %d tool calls, want one per recorded call (at least 6)", n)
		}
	})

	t.Run("an MCP client", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		client := sdk.NewClient(&sdk.Implementation{Name: "readme", Version: "1"}, nil)
		cmd := exec.Command(bin, "mcp", "--demo") // as `claude mcp add spotter -- spotter mcp --demo` starts it
		cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect to spotter mcp --demo: %v", err)
		}
		defer cs.Close()
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		if !strings.Contains(strings.Join(names, " "), "computer") {
			t.Errorf("tools = %v, want computer", names)
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "computer", Arguments: map[string]any{"kind": "screenshot"}})
		if err != nil || res.IsError {
			t.Fatalf("computer screenshot = %v, %v", res, err)
		}
		var images int
		var note string
		for _, c := range res.Content {
			switch c := c.(type) {
			case *sdk.ImageContent:
				images++
			case *sdk.TextContent:
				note = c.Text
			}
		}
		if images != 1 || !strings.Contains(note, "127.0.0.1") {
			t.Errorf("screenshot gave %d images and note %q, want one image of the demo app", images, note)
		}
	})
}
