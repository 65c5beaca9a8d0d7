package approvals_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// A real Chromium display is what the gate consumes.
var (
	_ approvals.HitTester      = (*cdp.Display)(nil)
	_ approvals.FocusReporter  = (*cdp.Display)(nil)
	_ approvals.DialogReporter = (*cdp.Display)(nil)
)

const shopPage = `<!doctype html>
<html><head><meta charset="utf-8"><style>body { margin: 0; font: 16px sans-serif; }</style></head>
<body>
<p style="position:absolute; left:700px; top:500px">Our shoes are the finest.</p>
<button style="position:absolute; left:100px; top:100px; width:200px; height:60px"
	onclick="fetch('/bought', {method: 'POST'})">Buy now</button>
</body></html>`

// clicker clicks once at a point of the sent image, then stops.
type clicker struct {
	at  actions.Point
	got []harness.Input
}

func (m *clicker) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	m.got = append(m.got, in)
	if len(m.got) > 1 {
		return harness.Turn{Stop: harness.StopEndTurn}, nil
	}
	return harness.Turn{Stop: harness.StopToolUse, Text: "Buying.", Calls: []harness.Call{{ID: "call_1", Name: "computer",
		Actions: []actions.Action{{Kind: actions.Click, At: m.at, HasAt: true}}}}}, nil
}

// TestGateOnChromium runs the loop on a real Chromium with the gate: a
// denied click on a buy button never reaches the page, an approved one
// does. The request shows the button and where it is in the screenshot.
func TestGateOnChromium(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against a real Chromium")
	}
	var bought atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, shopPage) })
	mux.HandleFunc("/bought", func(w http.ResponseWriter, r *http.Request) { bought.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	d, err := cdp.Open(t.Context(), cdp.Config{})
	if err != nil {
		t.Fatalf("cdp.Open() = %v", err)
	}
	defer d.Close(context.Background())

	tests := []struct {
		name    string
		verdict approvals.Verdict
		bought  int32
	}{
		{"deny", approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "over budget"}, 0},
		{"approve", approvals.Verdict{Kind: approvals.Approve, By: "ann"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bought.Store(0)
			if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: srv.URL}}); err != nil {
				t.Fatalf("navigate: %v", err)
			}
			q := approvals.NewQueue(approvals.QueueConfig{})
			g := newGate(t, approvals.GateConfig{Queue: q, HitTester: d, Dialogs: d, Session: "s1"})
			seen := decideNext(t.Context(), q, tt.verdict)
			// The 1280x800 viewport is sent at 640x400: the button's
			// centre, CSS (200,130), is image pixel (100,65).
			m := &clicker{at: actions.Pt(100, 65)}
			out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Approver: g,
				Policy: actions.Policy{Allow: actions.Kinds()}, Capture: screen.CaptureOptions{Size: screen.Size{W: 640, H: 400}}})
			if err != nil || out.Stop != harness.StopEndTurn {
				t.Fatalf("Run() = %+v, %v", out, err)
			}
			res := <-seen
			if res.err != nil {
				t.Fatalf("Decide() = %v", res.err)
			}
			r := res.req
			if r.Rule != approvals.RulePurchase || r.Target == nil || r.Target.Name != "Buy now" || r.Target.Tag != "button" {
				t.Errorf("request = rule %q target %+v, want purchase on the button Buy now", r.Rule, r.Target)
			}
			if r.Marker == nil || *r.Marker != actions.Pt(100, 65) || r.Point == nil || *r.Point != actions.Pt(201, 131) {
				t.Errorf("request marker %v point %v, want image (100,65) and CSS (201,131)", r.Marker, r.Point)
			}
			if !strings.HasPrefix(r.Frame.URL, srv.URL) {
				t.Errorf("request frame URL %q, want the shop", r.Frame.URL)
			}
			if got := bought.Load(); got != tt.bought {
				t.Errorf("the page registered %d purchases, want %d", got, tt.bought)
			}
			res0 := m.got[1].Results[0]
			if tt.bought == 0 && (!errors.Is(res0.Err, harness.ErrDenied) || !strings.Contains(res0.Err.Error(), "over budget")) {
				t.Errorf("the model got %v, want the denial with its reason", res0.Err)
			}
			if tt.bought == 1 && res0.Err != nil {
				t.Errorf("the model got %v, want success", res0.Err)
			}
		})
	}
}

// disguisedPage puts control, positioned where clicker clicks, on a page
// that reports clicks on it to /bought.
func disguisedPage(control string) string {
	return `<!doctype html>
<html><head><meta charset="utf-8"><style>body { margin: 0; font: 16px sans-serif; }
.c { position: absolute; left: 100px; top: 100px; width: 200px; height: 60px; display: block; }</style></head>
<body><span id="help" hidden>Help</span>` + control + `
<script>document.querySelector('.c').addEventListener('click', (e) => { e.preventDefault(); fetch('/bought', {method: 'POST'}); });</script>
</body></html>`
}

// TestGateReadsVisibleTextOnChromium: on a real page, an accessible name
// that says something harmless does not hide what a control shows. The
// gate flags the click by the control's visible text; the human's denial
// keeps it from the page.
func TestGateReadsVisibleTextOnChromium(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against a real Chromium")
	}
	tests := []struct {
		name    string
		control string
		rule    string
		label   string // the accessible name the hit-test reports
		text    string // the visible text
	}{
		{"aria-label on a buy button", `<button class="c" aria-label="More information">Buy now</button>`,
			approvals.RulePurchase, "More information", "Buy now"},
		{"aria-labelledby on a delete widget", `<div class="c" role="button" tabindex="0" aria-labelledby="help">Delete account</div>`,
			approvals.RuleDelete, "Help", "Delete account"},
		{"aria-label on a link that sends", `<a class="c" href="/send" aria-label="Read more">Send the transfer</a>`,
			approvals.RuleSend, "Read more", "Send the transfer"},
		{"aria-label on a submit input", `<form action="/pay" method="post"><input class="c" type="submit" value="Buy now" aria-label="Details"></form>`,
			approvals.RulePurchase, "Details", "Buy now"},
	}
	d, err := cdp.Open(t.Context(), cdp.Config{})
	if err != nil {
		t.Fatalf("cdp.Open() = %v", err)
	}
	defer d.Close(context.Background())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bought atomic.Int32
			mux := http.NewServeMux()
			mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, disguisedPage(tt.control)) })
			mux.HandleFunc("/bought", func(w http.ResponseWriter, r *http.Request) { bought.Add(1) })
			srv := httptest.NewServer(mux)
			defer srv.Close()
			if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: srv.URL}}); err != nil {
				t.Fatalf("navigate: %v", err)
			}
			q := approvals.NewQueue(approvals.QueueConfig{})
			g := newGate(t, approvals.GateConfig{Queue: q, HitTester: d, Dialogs: d, Session: "s1"})
			dctx, stop := context.WithCancel(t.Context())
			seen := decideNext(dctx, q, approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "not today"})
			// The control's centre, CSS (200,130), is image pixel (100,65)
			// of the 640x400 screenshot.
			m := &clicker{at: actions.Pt(100, 65)}
			out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Approver: g,
				Policy: actions.Policy{Allow: actions.Kinds()}, Capture: screen.CaptureOptions{Size: screen.Size{W: 640, H: 400}}})
			if err != nil || out.Stop != harness.StopEndTurn {
				t.Fatalf("Run() = %+v, %v", out, err)
			}
			stop() // a request came during the run, or none will
			res := <-seen
			if res.err != nil {
				t.Fatalf("Decide() = %v: the click was not flagged (the page registered %d clicks)", res.err, bought.Load())
			}
			r := res.req
			if r.Rule != tt.rule || r.Target == nil || r.Target.Name != tt.label || r.Target.Text != tt.text {
				t.Errorf("request = rule %q, target %+v; want %s on the element named %q showing %q", r.Rule, r.Target, tt.rule, tt.label, tt.text)
			}
			if want := fmt.Sprintf("(it shows %q)", tt.text); !strings.Contains(r.Reason, want) {
				t.Errorf("request reason = %q, want it to say %s", r.Reason, want)
			}
			if got := bought.Load(); got != 0 {
				t.Errorf("the page registered %d clicks after the denial, want none", got)
			}
			if res0 := m.got[1].Results[0]; !errors.Is(res0.Err, harness.ErrDenied) {
				t.Errorf("the model got %v, want the denial", res0.Err)
			}
		})
	}
}
