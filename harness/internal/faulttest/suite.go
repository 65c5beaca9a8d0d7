package faulttest

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// Adapter is what Run needs to know about a provider adapter.
type Adapter struct {
	API   string // how its errors name the endpoint: "the Anthropic API"
	Shape string // what its body check calls a good body: "a Messages API message"
	// New returns a model that sends to baseURL with 2 retries (3
	// attempts), a backoff of a millisecond or so, Key as its API key and
	// log as its logger.
	New func(t *testing.T, baseURL string, log *slog.Logger) harness.Model
	// Key is the API key New configures; Keys checks it never leaks.
	Key string
	// Fake starts the provider's fake endpoint, scripted to answer one
	// request with a turn that ends the task (no calls), and returns its
	// URL. Requests reach it through a proxy, with their paths unchanged.
	Fake func(t *testing.T) string
	// Good is a good response body of the API, which Cut cuts in half.
	Good string
	// Capture is what the loop captures; the zero value is the viewport.
	Capture screen.CaptureOptions
}

// Case is one fault scenario.
type Case struct {
	Name     string
	Faults   []Fault
	Requests int    // the adapter should make this many
	Err      string // the Outcome's Err holds API + " " + Err; empty: the run ends at end_turn
}

// Cases are the scenarios Run drives, for an adapter a.
func Cases(a Adapter) []Case {
	times3 := func(f Fault) []Fault { return []Fault{f, f, f} }
	return []Case{
		{Name: "500", Faults: times3(Status(500, "internal")), Requests: 3,
			Err: "answered 500 Internal Server Error 3 times; giving up: fault: internal"},
		{Name: "429", Faults: times3(Status(429, "rate limited")), Requests: 3,
			Err: "answered 429 Too Many Requests 3 times; giving up: fault: rate limited"},
		{Name: "429 with retry-after then ok", Faults: []Fault{Status(429, "rate limited", "Retry-After", "0")}, Requests: 2},
		{Name: "429 with a long retry-after", Faults: []Fault{Status(429, "quota", "Retry-After", "3600")}, Requests: 1,
			Err: "answered 429 Too Many Requests and asked to wait 1h0m0s, longer than the 2m0s allowed; giving up: fault: quota"},
		{Name: "html", Faults: times3(HTML), Requests: 3,
			Err: `answered 200 OK with a body that is not JSON (text/html: "<!DOCTYPE html>`},
		{Name: "garbage", Faults: times3(Garbage), Requests: 3,
			Err: `answered 200 OK with a body that is not JSON (application/json: "`},
		{Name: "wrong shape", Faults: times3(Fault{Body: `{"hello": "world"}`}), Requests: 3,
			Err: "answered 200 OK with JSON that is not " + a.Shape + " 3 times; giving up"},
		{Name: "cut", Faults: times3(Cut(a.Good)), Requests: 3,
			Err: "answered 200 OK but the response was cut off after "},
		{Name: "500 and cut then ok", Faults: []Fault{Status(503, "busy"), Cut(a.Good)}, Requests: 3},
	}
}

// Run drives harness.Run with a's model against every Case: the model
// must retry as many times as the case says, and the run must then end
// (at end_turn), or stop with StopError and an Outcome.Err that says
// what happened.
func Run(t *testing.T, a Adapter) {
	for _, c := range Cases(a) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			var next http.Handler // cases that give up never reach the fake
			if c.Err == "" {
				u, err := url.Parse(a.Fake(t))
				if err != nil {
					t.Fatal(err)
				}
				next = httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
			}
			srv := New(t, next, c.Faults...)
			m := a.New(t, srv.URL, slog.New(slog.DiscardHandler))
			out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: &screentest.Fake{},
				Task: "Say done.", Capture: a.Capture})
			if err != nil {
				t.Fatalf("harness.Run: %v", err)
			}
			t.Logf("harness.Run() = stop %q, error %q", out.Stop, out.Err)
			if n := srv.Requests(); n != c.Requests {
				t.Errorf("the endpoint got %d requests, want %d", n, c.Requests)
			}
			if c.Err == "" {
				if out.Stop != harness.StopEndTurn {
					t.Errorf("harness.Run() = %+v, want end_turn after the retries", out)
				}
				return
			}
			if want := a.API + " " + c.Err; out.Stop != harness.StopError || !strings.Contains(out.Err, want) {
				t.Errorf("harness.Run() = stop %q, error %q; want %q with an error containing %q", out.Stop, out.Err, harness.StopError, want)
			}
		})
	}
}

// Keys runs turns of a's model with every log line captured at debug
// level, against an endpoint that answers, then one that echoes the API
// key back in error bodies and pages: the key must reach the endpoint but
// appear in no log line, no Outcome and no trace event.
func Keys(t *testing.T, a Adapter) {
	if len(a.Key) < 8 {
		t.Fatalf("faulttest.Keys: Adapter.Key %q is too short to be recognizable", a.Key)
	}
	echo := "the key you sent, " + a.Key + ", is not valid"
	page := HTML
	page.Body = "<html><body>Forbidden: " + a.Key + "</body></html>"
	tests := []struct {
		name   string
		faults []Fault
		ok     bool
	}{
		{name: "ok", ok: true},
		{name: "401 echoing the key", faults: []Fault{Status(401, echo)}},
		{name: "500 echoing the key", faults: []Fault{Status(500, echo), Status(500, echo), Status(500, echo)}},
		{name: "page echoing the key", faults: []Fault{page, page, page}},
		{name: "text echoing the key", faults: []Fault{{Status: 403, ContentType: "text/plain", Body: echo}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var next http.Handler
			if tt.ok {
				u, err := url.Parse(a.Fake(t))
				if err != nil {
					t.Fatal(err)
				}
				next = httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
			}
			srv := New(t, next, tt.faults...)
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			var events []string
			out, err := harness.Run(t.Context(), harness.Config{Model: a.New(t, srv.URL, log), Display: &screentest.Fake{},
				Task: "Say done.", Capture: a.Capture, Logger: log,
				OnEvent: func(e trace.Event) { events = append(events, e.Error, e.Text) }})
			if err != nil {
				t.Fatalf("harness.Run: %v", err)
			}
			if !srv.Saw(a.Key) {
				t.Fatalf("the endpoint never received the key %q: the test proves nothing", a.Key)
			}
			if tt.ok != (out.Stop == harness.StopEndTurn) || !tt.ok && out.Err == "" {
				t.Errorf("harness.Run() = %+v, want end_turn %v", out, tt.ok)
			}
			if len(tt.faults) > 1 && logs.Len() == 0 {
				t.Errorf("the retries logged nothing at debug level: the test proves nothing")
			}
			for what, s := range map[string]string{"logs": logs.String(), "Outcome.Err": out.Err, "Outcome.Text": out.Text,
				"events": strings.Join(events, "\n")} {
				if strings.Contains(s, a.Key) {
					t.Errorf("the API key appears in the %s:\n%s", what, s)
				}
			}
			t.Logf("harness.Run() = stop %q, error %q", out.Stop, out.Err)
		})
	}
}
