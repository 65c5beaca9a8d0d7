package session

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/screen"
)

// The keyless models: a script needs valid turns, the demo resolves its
// start URL to the built-in demo app (which answers), and neither takes
// what it cannot use.
func TestBuiltinModels(t *testing.T) {
	spec := func(js string) Spec {
		t.Helper()
		var s Spec
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := spec(`{"messages": [{"role": "user", "content": "go"}], "model": {"provider": "demo"}}`)
	if err := s.defaults(KindAgent); err != nil {
		t.Fatalf("demo spec: %v", err)
	}
	u, err := url.Parse(s.StartURL)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" {
		t.Fatalf("demo start_url = %q, want the demo app on loopback", s.StartURL)
	}
	if !slices.Equal(s.Policy.Hosts, []string{u.Host}) {
		t.Errorf("demo policy hosts = %v, want the demo app's %s only", s.Policy.Hosts, u.Host)
	}
	if got, want := s.Image(), (screen.Size{W: 1280, H: 800}); got != want {
		t.Errorf("demo image = %v, want %v, the recording's", got, want)
	}
	resp, err := http.Get(s.StartURL)
	if err != nil {
		t.Fatalf("GET the demo app: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Check in") {
		t.Errorf("demo app answered %s: %.100q", resp.Status, b)
	}

	// A script on the demo app, with "demo" in its hosts.
	s = spec(`{"model": {"provider": "script", "turns": [{"say": "hi", "actions": [{"type": "click", "x": 10, "y": 20}]}, {"say": "done"}]},
		"start_url": "demo:/", "policy": {"allow": ["click"], "hosts": ["demo", "example.com"]}}`)
	if err := s.defaults(KindAgent); err != nil {
		t.Fatalf("script spec: %v", err)
	}
	if !strings.HasPrefix(s.StartURL, "http://127.0.0.1:") || s.Policy.Hosts[0] == "demo" || s.Policy.Hosts[1] != "example.com" {
		t.Errorf("script on the demo app: start_url %q, hosts %v; want the app's address for demo", s.StartURL, s.Policy.Hosts)
	}
	if got := s.Image(); got != (screen.Size{W: 1280, H: 800}) {
		t.Errorf("script image = %v, want the display's", got)
	}

	for _, tt := range []struct{ name, spec, want string }{
		{"script without turns", `{"model": {"provider": "script"}}`, "needs turns"},
		{"script with a bad action", `{"model": {"provider": "script", "turns": [{"actions": [{"type": "click", "x": 1}]}]}}`, `model.turns[0].actions[0]: click: missing "y"`},
		{"script with tools", `{"tools": [{"name": "t"}], "model": {"provider": "script", "turns": [{"say": "x"}]}}`, "application-side tools"},
		{"turns for another provider", `{"model": {"provider": "anthropic", "turns": [{"say": "x"}]}}`, "for the script provider"},
		{"demo with a model name", `{"model": {"provider": "demo", "name": "gpt-5"}}`, "no tools, model name or base_url"},
		{"demo on another display", `{"display": {"width": 1920, "height": 1080}, "model": {"provider": "demo"}}`, "recorded at 1280x800"},
	} {
		s := spec(tt.spec)
		err := s.defaults(KindAgent)
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: defaults() = %v, want ErrBadRequest containing %q", tt.name, err, tt.want)
		}
	}
}
