package session

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/internal/demo"
)

// Model providers the server runs without a key or a network, so that
// anyone can try a supervised session in a minute (the panel offers both).
const (
	// ProviderScript replays ModelSpec.Turns, written in advance as OpenAI
	// computer actions in the pixels of the session's screenshots.
	ProviderScript = "script"
	// ProviderDemo replays the built-in demo: a hand-written replay of
	// Claude's answers, in the Messages API's response format, on the
	// built-in demo app, decoded by the real Anthropic adapter. Its
	// start_url defaults to DemoScheme's front page; its display must be
	// the replay's 1280x800.
	ProviderDemo = "demo"
)

// DemoModelName is the model the built-in demo's recording is of.
const DemoModelName = "claude-sonnet-4-5"

// DemoScheme prefixes a start URL served by the built-in demo app, as in
// task files: "demo:/" is its front page. The app is started, on a
// loopback port, the first time a session asks for it, and runs as long as
// the process; "demo" in the session's policy hosts stands for its
// address. A session restored after a restart keeps the address it was
// given, where the new process may serve nothing.
const DemoScheme = "demo:"

var demoApp struct {
	once sync.Once
	base string
	err  error
}

// demoBase returns the demo app's base URL, starting the app the first
// time. It serves until the process exits.
func demoBase() (string, error) {
	demoApp.once.Do(func() {
		demoApp.base, _, demoApp.err = demo.NewServer().Serve(context.Background())
	})
	return demoApp.base, demoApp.err
}

// builtin checks a spec's script or demo model and resolves a demo: start
// URL to the demo app's address (and "demo" in its policy hosts). It runs
// before defaults checks the start URL.
func (s *Spec) builtin(kind string) error {
	m := s.Model
	switch {
	case m.Provider == ProviderScript && kind == KindAgent:
		if len(m.Turns) == 0 {
			return bad("a script model needs turns: [{\"say\": ..., \"actions\": [{\"type\": \"click\", \"x\": ..., \"y\": ...}]}]")
		}
		if len(s.Tools) > 0 {
			return bad("a script model cannot call application-side tools")
		}
		if err := script.Check(m.Turns); err != nil {
			return bad("model.%v", err)
		}
	case len(m.Turns) > 0:
		return bad("model.turns are for the script provider, not %q", m.Provider)
	case m.Provider == ProviderDemo && kind == KindAgent:
		if len(s.Tools) > 0 || m.Name != "" || m.BaseURL != "" {
			return bad("the built-in demo replays %s's answers, written by hand, on the demo app: it takes no tools, model name or base_url", DemoModelName)
		}
		if s.StartURL == "" {
			s.StartURL = DemoScheme + "/"
		}
		if w, h := s.Display.Width, s.Display.Height; (w != 0 || h != 0) && (w != 1280 || h != 800) {
			return bad("the built-in demo was recorded at 1280x800, not %dx%d", w, h)
		}
	}
	path, ok := strings.CutPrefix(s.StartURL, DemoScheme)
	if !ok {
		return nil
	}
	base, err := demoBase()
	if err != nil {
		return fmt.Errorf("start the demo app: %w", err)
	}
	s.StartURL = base + "/" + strings.TrimPrefix(path, "/")
	if s.Policy != nil {
		u, err := url.Parse(base)
		if err != nil {
			return err
		}
		p := *s.Policy
		p.Hosts = append([]string(nil), p.Hosts...)
		for i, h := range p.Hosts {
			if h == "demo" {
				p.Hosts[i] = u.Host
			}
		}
		s.Policy = &p
	}
	return nil
}
