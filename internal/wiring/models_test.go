package wiring

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
)

// TestNewModel builds every provider's adapter with an application-side
// tool: each is Stateful, and the Anthropic one declares the tool to a fake.
func TestNewModel(t *testing.T) {
	tools := []harness.ToolSpec{{Name: "lookup_booking", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	image := screen.Size{W: 1280, H: 800}
	env := func(k string) string {
		if strings.HasSuffix(k, "_API_KEY") {
			return "test-key"
		}
		return ""
	}
	quiet := slog.New(slog.DiscardHandler)
	for _, p := range Providers {
		spec := ModelSpec{Provider: p, Name: map[string]string{"chat": "qwen2.5-vl"}[p]}
		if p == "script" {
			if _, err := NewModel(spec, image, tools, env, quiet); !errors.Is(err, ErrSpec) {
				t.Errorf("NewModel(script with tools) error = %v, want ErrSpec", err)
			}
			m, err := NewModel(spec, image, nil, env, quiet)
			if _, ok := m.(harness.Stateful); err != nil || !ok {
				t.Errorf("NewModel(script) = %T, %v, want a Stateful model", m, err)
			}
			continue
		}
		m, err := NewModel(spec, image, tools, env, quiet)
		if err != nil {
			t.Errorf("NewModel(%s) error: %v", p, err)
			continue
		}
		if _, ok := m.(harness.Stateful); !ok {
			t.Errorf("NewModel(%s) = %T, not harness.Stateful", p, m)
		}
	}

	srv := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}})
	m, err := NewModel(ModelSpec{Provider: "anthropic", BaseURL: srv.URL}, image, tools, env, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Next(t.Context(), harness.Input{Task: "t"}); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 2 || body.Tools[1].Name != "lookup_booking" {
		t.Errorf("request tools = %+v, want computer and lookup_booking", body.Tools)
	}
}

func TestBrowserToolsReachEveryProvider(t *testing.T) {
	for _, p := range []string{"anthropic", "openai", "gemini", "chat"} {
		m := ModelSpec{Provider: p, Name: "some-model", BrowserTools: true}
		if p == "chat" {
			m.Name = "qwen2.5-vl-7b-instruct" // a function-calling model, not UI-TARS
		}
		getenv := func(string) string { return "test-key" }
		if _, err := NewModel(m, screen.Size{W: 1280, H: 800}, nil, getenv, nil); err != nil {
			t.Errorf("%s with browser_tools: %v", p, err)
		}
	}
	// UI-TARS speaks its own trained actions: there is nowhere to declare them.
	uitars := ModelSpec{Provider: "chat", Name: "ui-tars-1.5-7b", BrowserTools: true}
	if _, err := NewModel(uitars, screen.Size{W: 1280, H: 800}, nil, func(string) string { return "k" }, nil); err == nil {
		t.Errorf("chat UI-TARS with browser_tools: no error, want a refusal")
	}
}

// TestContextReachesEveryProvider: model.context goes to each adapter,
// which refuses a bad one.
func TestContextReachesEveryProvider(t *testing.T) {
	getenv := func(string) string { return "test-key" }
	for _, p := range []string{"anthropic", "openai", "gemini", "chat"} {
		m := ModelSpec{Provider: p, Name: "some-model", Context: ctxpolicy.Policy{Keep: 2, Chunk: 2}}
		if _, err := NewModel(m, screen.Size{W: 1280, H: 800}, nil, getenv, nil); err != nil {
			t.Errorf("%s with context %+v: %v", p, m.Context, err)
		}
		m.Context = ctxpolicy.Policy{Keep: -7}
		if _, err := NewModel(m, screen.Size{W: 1280, H: 800}, nil, getenv, nil); err == nil || !strings.Contains(err.Error(), "keep -7") {
			t.Errorf("%s with context %+v: error %v, want one about keep -7", p, m.Context, err)
		}
	}
	script := ModelSpec{Provider: "script", Turns: []script.Turn{{Say: "hi"}}, Context: ctxpolicy.Policy{Keep: 2}}
	if _, err := NewModel(script, screen.Size{W: 1280, H: 800}, nil, getenv, nil); err == nil {
		t.Errorf("script with a context: no error, want a refusal")
	}
}

// The executor API's codecs: one per wire format, and a clear error for
// any other.
func TestCodecFor(t *testing.T) {
	for _, p := range ExecutorProviders {
		c, err := CodecFor(p, "")
		if err != nil || c.Decode == nil || c.Encode == nil {
			t.Errorf("CodecFor(%q) = %+v, %v; want a decoder and an encoder", p, c, err)
		}
	}
	if _, err := CodecFor("chat", ""); !errors.Is(err, ErrSpec) {
		t.Errorf("CodecFor(chat) = %v, want ErrSpec", err)
	}
}
