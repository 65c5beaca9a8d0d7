package web_test

// Provider keys stay home (issue 15, finding 4): the server's own keys go
// only to each provider's official endpoint, to the operator's base URLs
// and to those it allowed (AllowBaseURLs, spotter serve --allow-base-url).
// A session that names another base URL brings its own key in the
// X-Spotter-Provider-Key header, which is kept in memory only. The fakes
// stand for the providers' endpoints, in their real shapes, on loopback,
// and record every request's headers.

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/internal/syncbuf"
	"github.com/spotter-harness/spotter/web"
)

// The server's keys, as its environment holds them, and a client's own.
const (
	serverAnthropicKey = "sk-ant-server-0123456789abcdef"
	serverOpenAIKey    = "sk-openai-server-0123456789abcdef"
	serverGoogleKey    = "AIza-server-0123456789abcdef"
	clientKey          = "sk-client-own-key-fedcba9876543210"
)

var serverKeys = []string{serverAnthropicKey, serverOpenAIKey, serverGoogleKey}

// keysEnv is a server that builds its sessions' models itself, from an
// environment holding the server's keys, and logs everything to a buffer.
func keysEnv(t *testing.T, allow []string, extraEnv map[string]string) (*env, *syncbuf.Buffer) {
	t.Helper()
	e := newEnv(t, envOpts{fake: true})
	e.stop()
	vars := map[string]string{"ANTHROPIC_API_KEY": serverAnthropicKey, "OPENAI_API_KEY": serverOpenAIKey,
		"OPENAI_ORG_ID": "org-server", "GOOGLE_API_KEY": serverGoogleKey}
	for k, v := range extraEnv {
		vars[k] = v
	}
	logs := &syncbuf.Buffer{}
	e.cfg.NewModel = nil
	e.cfg.Getenv = func(k string) string { return vars[k] }
	e.cfg.AllowBaseURLs = allow
	e.cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.start()
	return e, logs
}

// endpoint is a fake provider endpoint and what it received.
type endpoint struct {
	provider, model, url string
	headers              func() []http.Header
	key                  func(http.Header) string // the key a request carried
}

func anthropicEndpoint(t *testing.T, replies int) endpoint {
	var rs []anthropictest.Reply
	for range replies {
		rs = append(rs, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}})
	}
	f := anthropictest.NewServer(t, rs...)
	return endpoint{"anthropic", modelName, f.URL, func() []http.Header {
		var hs []http.Header
		for _, r := range f.Requests() {
			hs = append(hs, r.Header)
		}
		return hs
	}, func(h http.Header) string { return h.Get("X-Api-Key") }}
}

func openaiEndpoint(t *testing.T, replies int) endpoint {
	var rs []openaitest.Reply
	for range replies {
		rs = append(rs, openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}})
	}
	f := openaitest.NewServer(t, rs...)
	return endpoint{"openai", "", f.URL, func() []http.Header {
		var hs []http.Header
		for _, r := range f.Requests() {
			hs = append(hs, r.Header)
		}
		return hs
	}, func(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") }}
}

func geminiEndpoint(t *testing.T, replies int) endpoint {
	var rs []geminitest.Reply
	for range replies {
		rs = append(rs, geminitest.Text("Done."))
	}
	f := geminitest.NewServer(t, rs...)
	return endpoint{"gemini", "", f.URL, func() []http.Header {
		var hs []http.Header
		for _, r := range f.Requests() {
			hs = append(hs, r.Header)
		}
		return hs
	}, func(h http.Header) string { return h.Get("X-Goog-Api-Key") }}
}

// createSession sends PUT /session with the provider key header key (none
// if empty) and reads the answer to its end.
func (e *env) createSession(body map[string]any, key string) (int, string, []sseEvent) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(e.t.Context(), "PUT", e.base+"/session", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(web.HeaderProviderKey, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("PUT /session: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out), nil
	}
	return resp.StatusCode, resp.Header.Get("X-Session-Id"), readSSE(e.t, resp.Body)
}

func modelSpec(ep endpoint, baseURL string, msg string) map[string]any {
	m := map[string]any{"provider": ep.provider, "base_url": baseURL}
	if ep.model != "" {
		m["name"] = ep.model
	}
	s := map[string]any{"model": m, "display": map[string]any{"width": 1024, "height": 640},
		"approvals": map[string]any{"supervise": "none"}}
	if msg != "" {
		s["messages"] = []map[string]any{{"role": "user", "content": msg}}
	}
	return s
}

// noServerKey fails if any header of any request holds one of the server's
// keys, or its account.
func noServerKey(t *testing.T, what string, hs []http.Header) {
	t.Helper()
	for i, h := range hs {
		for name, vs := range h {
			for _, v := range vs {
				for _, k := range append(serverKeys, "org-server") {
					if strings.Contains(v, k) {
						t.Errorf("%s: request %d carried the server's secret %q in %s", what, i, k, name)
					}
				}
			}
		}
	}
}

// notStored fails if s shows up in the server's files, logs or answers.
func notStored(t *testing.T, e *env, logs *syncbuf.Buffer, s string, answers ...string) {
	t.Helper()
	for _, a := range answers {
		if strings.Contains(a, s) {
			t.Errorf("an answer shows the key: %.300s", a)
		}
	}
	if strings.Contains(logs.String(), s) {
		t.Errorf("the server's log shows the key")
	}
	err := filepath.WalkDir(e.data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(s)) {
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A session naming a base URL the operator did not allow is refused with
// the reason, and the endpoint receives nothing; allowed, it gets the
// server's key; with the client's own key, exactly that key.
func TestProviderKeysStayHome(t *testing.T) {
	t.Parallel()
	for _, p := range []struct {
		name        string
		newEndpoint func(*testing.T, int) endpoint
	}{{"anthropic", anthropicEndpoint}, {"openai", openaiEndpoint}, {"gemini", geminiEndpoint}} {
		newEndpoint := p.newEndpoint
		t.Run(p.name, func(t *testing.T) {
			t.Run("foreign base URL", func(t *testing.T) {
				ep := newEndpoint(t, 0)
				e, logs := keysEnv(t, nil, nil)
				code, body, _ := e.createSession(modelSpec(ep, ep.url, "Say done."), "")
				if code != http.StatusBadRequest || !strings.Contains(body, web.HeaderProviderKey) || !strings.Contains(body, "--allow-base-url") {
					t.Errorf("PUT /session naming %s = %d %s, want 400 saying to send a key or have it allowed", ep.url, code, body)
				}
				if hs := ep.headers(); len(hs) != 0 {
					t.Errorf("the endpoint received %d requests, want none", len(hs))
				}
				var list struct{ Sessions []any }
				e.getJSON("/sessions", &list)
				if len(list.Sessions) != 0 {
					t.Errorf("sessions after the refusal = %v, want none", list.Sessions)
				}
				for _, k := range serverKeys {
					notStored(t, e, logs, k, body)
				}
			})
			t.Run("allowed", func(t *testing.T) {
				ep := newEndpoint(t, 1)
				e, _ := keysEnv(t, []string{ep.url}, nil)
				code, id, evs := e.createSession(modelSpec(ep, ep.url, "Say done."), "")
				if code != http.StatusOK || len(evs) == 0 || evs[len(evs)-1].field("stopReason") != "end_turn" {
					t.Fatalf("PUT /session with an allowed base URL = %d %s %v, want a turn to end_turn", code, id, kinds(evs))
				}
				hs := ep.headers()
				if len(hs) != 1 {
					t.Fatalf("the endpoint received %d requests, want 1", len(hs))
				}
				want := map[string]string{"anthropic": serverAnthropicKey, "openai": serverOpenAIKey, "gemini": serverGoogleKey}[ep.provider]
				if got := ep.key(hs[0]); got != want {
					t.Errorf("key sent to the allowed endpoint = %q, want the server's %q", got, want)
				}
			})
			t.Run("own key", func(t *testing.T) {
				ep := newEndpoint(t, 1)
				e, logs := keysEnv(t, nil, nil)
				code, id, evs := e.createSession(modelSpec(ep, ep.url, "Say done."), clientKey)
				if code != http.StatusOK || len(evs) == 0 || evs[len(evs)-1].field("stopReason") != "end_turn" {
					t.Fatalf("PUT /session with the client's key = %d %s %v, want a turn to end_turn", code, id, kinds(evs))
				}
				hs := ep.headers()
				if len(hs) != 1 {
					t.Fatalf("the endpoint received %d requests, want 1", len(hs))
				}
				for i, h := range hs {
					if got := ep.key(h); got != clientKey {
						t.Errorf("request %d carried key %q, want the client's %q", i, got, clientKey)
					}
				}
				noServerKey(t, "own key", hs)
				var answers []string
				for _, p := range []string{"/session/" + id, "/sessions", "/audit", "/approvals"} {
					r := e.request("GET", p, nil)
					b, _ := io.ReadAll(r.Body)
					r.Body.Close()
					answers = append(answers, string(b))
				}
				for _, ev := range evs {
					answers = append(answers, string(ev.Data))
				}
				notStored(t, e, logs, clientKey, answers...)
			})
		})
	}
}

// The other refusals: plain http off loopback, even with a key; a header
// that is not a key; and the trusted endpoints: the official one, the
// operator's base URL, an allowed prefix.
func TestProviderBaseURLs(t *testing.T) {
	t.Parallel()
	e, _ := keysEnv(t, []string{"https://gateway.example/anthropic"}, map[string]string{"OPENAI_BASE_URL": "http://10.1.2.3:8000/v1"})
	tests := []struct {
		name, provider, base, key string
		want                      int
		say                       string
	}{
		{"plain http off loopback with a key", "anthropic", "http://192.0.2.7/", clientKey, 400, "plain http"},
		{"plain http off loopback", "anthropic", "http://models.example:8080", "", 400, "plain http"},
		{"https elsewhere without a key", "anthropic", "https://models.example/v1", "", 400, web.HeaderProviderKey},
		{"https elsewhere with a key", "anthropic", "https://models.example/v1", clientKey, 200, ""},
		{"loopback http with a key", "anthropic", "http://127.0.0.1:9/", clientKey, 200, ""},
		{"credentials in the URL", "anthropic", "https://user:pw@models.example/", clientKey, 400, "no user name"},
		{"dot segments", "anthropic", "https://gateway.example/anthropic/../other", "", 400, ".."},
		{"not a URL", "anthropic", "gateway.example", "", 400, "want an http or https URL"},
		{"the official endpoint", "anthropic", "https://api.anthropic.com", "", 200, ""},
		{"the official endpoint, another path", "openai", "https://API.openai.com:443/v1/", "", 200, ""},
		{"an allowed prefix", "anthropic", "https://gateway.example/anthropic/v1", "", 200, ""},
		{"beside an allowed prefix", "anthropic", "https://gateway.example/anthropic2", "", 400, web.HeaderProviderKey},
		{"the operator's plain-http base URL", "openai", "http://10.1.2.3:8000/v1/", "", 200, ""},
		{"chat at a foreign server", "chat", "http://127.0.0.1:9/v1", "", 400, web.HeaderProviderKey},
		{"a key with a space", "anthropic", "https://models.example/v1", "two words", 400, web.HeaderProviderKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]any{"provider": tt.provider, "base_url": tt.base}
			if tt.provider == "chat" {
				m["name"] = "ui-tars-1.5-7b"
			}
			// No messages: the session waits for one, and no model is asked.
			code, body, _ := e.createSession(map[string]any{"model": m}, tt.key)
			if code != tt.want || !strings.Contains(body, tt.say) {
				t.Errorf("PUT /session with base_url %q (key %v) = %d %s, want %d saying %q", tt.base, tt.key != "", code, body, tt.want, tt.say)
			}
			if strings.Contains(body, clientKey) || strings.Contains(body, "pw@") {
				t.Errorf("the answer echoes a secret: %s", body)
			}
		})
	}
}

// A session that brought its own key cannot resume after a restart: the
// key was held in memory only. It fails with a reason that says so, and
// the server never sends its own key in its place.
func TestProviderKeyAfterRestart(t *testing.T) {
	t.Parallel()
	f := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("I will click."), click(t, "toolu_1", 100, 100)}})
	e, logs := keysEnv(t, nil, nil)
	spec := modelSpec(endpoint{provider: "anthropic", model: modelName}, f.URL, "Click it.")
	spec["approvals"] = map[string]any{"supervise": "all"}
	code, id, evs := e.createSession(spec, clientKey)
	if code != http.StatusOK || len(evs) == 0 || evs[len(evs)-1].field("stopReason") != "tool_use" {
		t.Fatalf("PUT /session = %d %s %v, want a turn waiting for a permission", code, id, kinds(evs))
	}
	e.restart()
	var h struct {
		Session struct{ Status, Error string }
	}
	e.getJSON("/session/"+id, &h)
	if h.Session.Status != "failed" || !strings.Contains(h.Session.Error, web.HeaderProviderKey) ||
		!strings.Contains(h.Session.Error, "create a new session") {
		t.Errorf("session after the restart = %+v, want failed, saying the key is gone and to create a new session", h.Session)
	}
	var hs []http.Header
	for _, r := range f.Requests() {
		hs = append(hs, r.Header)
		if got := r.Header.Get("X-Api-Key"); got != clientKey {
			t.Errorf("request carried key %q, want only the client's", got)
		}
	}
	noServerKey(t, "after the restart", hs)
	notStored(t, e, logs, clientKey, h.Session.Error)

	// A user message cannot continue it: refused with the reason, which
	// the record keeps.
	reason := h.Session.Error
	resp := e.request("POST", "/session/"+id, map[string]any{"messages": []map[string]any{{"role": "user", "content": "Go on."}}})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), web.HeaderProviderKey) {
		t.Errorf("POST /session/%s with a user message after the restart = %d %s, want 409 saying the key is gone", id, resp.StatusCode, b)
	}
	e.getJSON("/session/"+id, &h)
	if h.Session.Status != "failed" || h.Session.Error != reason {
		t.Errorf("session after the refused message = %+v, want failed with the reason %q kept", h.Session, reason)
	}
}
