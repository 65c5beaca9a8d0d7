package runner

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/screen"
)

const minimal = `
task: t
start_url: "demo:/"
model: {turns: [{say: hi}]}
`

func TestParseDefaults(t *testing.T) {
	got, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatalf("Parse(minimal) error = %v", err)
	}
	if !reflect.DeepEqual(got.Display, wiring.DisplaySpec{Backend: wiring.Chromium, Width: 1280, Height: 800, DPR: 1}) || got.Image.Format != screen.PNG || got.Model.Provider != "script" ||
		got.MaxSteps != 50 || got.Timeout != 10*time.Minute {
		t.Errorf("Parse(minimal) = %+v, want the documented defaults", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", minimal + "colour: red\n", "colour"},
		{"no start url", "task: t\nmodel: {turns: [{say: hi}]}\n", "start_url"},
		{"bad scheme", strings.Replace(minimal, "demo:/", "file:///etc/passwd", 1), "start_url"},
		{"no model", "task: t\nstart_url: about:blank\n", "provider"},
		{"upscale", minimal + "image: {width: 2000, height: 1250}\n", "never upscales"},
		{"aspect", minimal + "image: {width: 1024, height: 700}\n", "aspect"},
		{"half size", minimal + "image: {width: 1024}\n", "both"},
		{"dpr", minimal + "display: {width: 1280, height: 800, dpr: 9}\n", "dpr"},
		{"format", minimal + "image: {format: gif}\n", "gif"},
		{"bad policy kind", minimal + "policy: {allow: [teleport]}\n", "teleport"},
		{"context keep", "task: t\nstart_url: about:blank\nmodel: {provider: anthropic, context: {keep: -2}}\n", "keep -2"},
		{"context chunk", "task: t\nstart_url: about:blank\nmodel: {provider: gemini, context: {chunk: -1}}\n", "chunk -1"},
		{"context field", "task: t\nstart_url: about:blank\nmodel: {provider: openai, context: {kept: 2}}\n", "kept"},
		{"context for a script", "task: t\nstart_url: about:blank\nmodel: {turns: [{say: hi}], context: {keep: 2}}\n", "script"},
		{"negative timeout", minimal + "timeout: -5s\n", "timeout -5s is negative"},
		{"timeout too short", minimal + "timeout: 1ms\n", "timeout 1ms is outside 1s..24h0m0s"},
		{"timeout too long", minimal + "timeout: 9000h\n", "timeout 9000h0m0s is outside 1s..24h0m0s"},
		{"timeout without a unit", minimal + "timeout: 30\n", `timeout (line 5): want a duration such as 90s, 5m or 1h30m, got "30"`},
		{"a policy host no host matches", minimal + "policy: {hosts: [example.com, 'http://x']}\n", `policy: hosts[1]: host pattern "http://x"`},
		{"a wildcard port", minimal + "policy: {hosts: ['*:*']}\n", `policy: hosts[0]: host pattern "*:*"`},
		{"a zone", minimal + "policy: {hosts: ['[::1%eth0]']}\n", `has a zone`},
		{"a script action's field, by its path", "task: t\nstart_url: about:blank\nmodel:\n  turns:\n    - say: a\n    - say: b\n" +
			"    - actions: [{type: click, x: abc, y: 1}]\n", `model.turns[2].actions[0]: click: "x" must be a number, got a string`},
		{"a field of a turn, by its path", "task: t\nstart_url: about:blank\nmodel:\n  turns:\n    - say: a\n    - sya: b\n",
			"model.turns[1].sya (line 6): unknown field; the fields here are actions, calls, expect_error, frame, say"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if !errors.Is(err, ErrTask) && !errors.Is(err, actions.ErrInvalid) {
				t.Fatalf("Parse() error = %v, want ErrTask", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse() error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestParseContext(t *testing.T) {
	got, err := Parse([]byte("task: t\nstart_url: about:blank\nmodel: {provider: anthropic, context: {keep: 2, chunk: 4, repeats: true}}\n"))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if want := (ctxpolicy.Policy{Keep: 2, Chunk: 4, Repeats: true}); got.Model.Context != want {
		t.Errorf("Parse() model.context = %+v, want %+v", got.Model.Context, want)
	}
}

func TestLoadPolicyFileAndName(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("allow: [click]\nhosts: [example.com]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "my-task.yaml")
	if err := os.WriteFile(path, []byte(minimal+"policy_file: p.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "my-task" || len(got.Policy.Allow) != 1 || got.Policy.Allow[0] != actions.Click {
		t.Errorf("Load() name %q policy %+v, want my-task allowing click", got.Name, got.Policy)
	}
}

func TestExampleTasksParse(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example tasks found")
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("Load(%s) error = %v", f, err)
		}
	}
}

func TestDemoHosts(t *testing.T) {
	got := DemoHosts([]string{"demo", "example.com"}, "http://127.0.0.1:4567")
	if got[0] != "127.0.0.1:4567" || got[1] != "example.com" {
		t.Errorf("DemoHosts() = %v", got)
	}
}

// A task names its display's backend; a desktop needs no start URL, and a
// bad display is refused when the task is loaded, in words.
func TestParseDisplayBackends(t *testing.T) {
	desk, err := Parse([]byte("task: t\ndisplay: {backend: desktop, command: [xterm, -e, sh]}\nmodel: {turns: [{say: hi}]}\n"))
	if err != nil {
		t.Fatalf("Parse(desktop) = %v", err)
	}
	if desk.Display.Backend != wiring.Desktop || desk.StartURL != "about:blank" || len(desk.Display.Command) != 3 {
		t.Errorf("Parse(desktop) display = %+v, start_url %q; want a desktop running xterm on about:blank", desk.Display, desk.StartURL)
	}
	for _, tt := range []struct{ name, yaml, want string }{
		{"unknown backend", "display: {backend: rdp}\nstart_url: about:blank", "display.backend \"rdp\""},
		{"vnc without address", "display: {backend: vnc}", "display.address is required"},
		{"desktop with a page", "display: {backend: desktop}\nstart_url: https://example.com/", "no browser to open it"},
		{"password in the file", "display: {backend: vnc, address: \"h:5900\", password: x}", "display.password (line 2): unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("task: t\n" + tt.yaml + "\nmodel: {turns: [{say: hi}]}\n"))
			if !errors.Is(err, ErrTask) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%s) = %v, want ErrTask saying %q", tt.name, err, tt.want)
			}
		})
	}
}
