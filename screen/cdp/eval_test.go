package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// What internal/qa's DOM checks need of a display, restated here so that
// this package does not import it.
var _ interface {
	Eval(context.Context, string) (json.RawMessage, error)
} = (*Display)(nil)

func TestEvalValues(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "static.html")
	tests := []struct{ expr, want string }{
		{"1 + 1", "2"},
		{"document.title", `"static"`},
		{"document.querySelector('h1').innerText", `"A static page"`},
		{"document.querySelectorAll('li').length", "3"},
		{"({a: [1, 'x', null], b: true})", `{"a":[1,"x",null],"b":true}`},
		{"undefined", "null"},
		{"Promise.resolve(5)", "5"},
		{"new Promise(r => setTimeout(() => r('later'), 50))", `"later"`},
	}
	for _, tt := range tests {
		got, err := d.Eval(t.Context(), tt.expr)
		if err != nil || string(got) != tt.want {
			t.Errorf("Eval(%q) = %s, %v; want %s", tt.expr, got, err, tt.want)
		}
	}
}

// TestEvalIsolated overrides built-ins and defines globals in the page's
// own world: Eval sees the DOM, but none of that.
func TestEvalIsolated(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "static.html")
	eval[bool](t, d, `window.secret = 42;
		document.querySelector = () => null;
		String.prototype.includes = () => true;
		Object.defineProperty(HTMLElement.prototype, "innerText", {get() { return "faked" }});
		document.body.dataset.mark = "set by the page";
		true`)
	tests := []struct{ expr, want string }{
		{"typeof window.secret", `"undefined"`},
		{"document.querySelector('#b') !== null", "true"},
		{"'abc'.includes('x')", "false"},
		{"document.querySelector('h1').innerText", `"A static page"`},
		{"document.body.dataset.mark", `"set by the page"`}, // the DOM itself is shared
	}
	for _, tt := range tests {
		got, err := d.Eval(t.Context(), tt.expr)
		if err != nil || string(got) != tt.want {
			t.Errorf("Eval(%q) = %s, %v; want %s", tt.expr, got, err, tt.want)
		}
	}
	// What Eval leaves in its world, the page does not see.
	if _, err := d.Eval(t.Context(), "window.fromEval = 1"); err != nil {
		t.Fatalf("Eval(assignment) = %v", err)
	}
	if got := eval[string](t, d, "typeof window.fromEval"); got != "undefined" {
		t.Errorf("the page sees a global Eval set: typeof = %q", got)
	}
}

func TestEvalSameOriginFrame(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	loadHitTest(t, d)
	got, err := d.Eval(t.Context(), `document.getElementById("same").contentDocument.querySelector("#del").getAttribute("aria-label")`)
	if err != nil || string(got) != `"Delete account"` {
		t.Errorf("Eval(same-origin iframe's button) = %s, %v; want \"Delete account\"", got, err)
	}
}

func TestEvalErrors(t *testing.T) {
	d := newDisplay(t, DisplayConfig{CommandTimeout: 2 * time.Second})
	load(t, d, "static.html")
	tests := []struct {
		name, expr string
		want       error
		mention    string
	}{
		{"throws", `(() => { throw new Error("boom") })()`, ErrScript, "boom"},
		{"syntax error", "1 +", ErrScript, "SyntaxError"},
		{"rejected promise", `Promise.reject(new TypeError("nope"))`, ErrScript, "nope"},
		{"NaN", "0 / 0", ErrScript, "NaN"},
		{"BigInt", "10n", ErrScript, "10n"},
		{"endless loop", "for (;;) {}", ErrUnresponsive, "stopped"},
		{"promise that never settles", "new Promise(() => {})", ErrUnresponsive, "did not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Eval(t.Context(), tt.expr)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("Eval(%q) = %s, %v; want an error wrapping %v that mentions %q", tt.expr, got, err, tt.want, tt.mention)
			}
		})
	}
	// The page is usable after all of them.
	if got, err := d.Eval(t.Context(), "document.title"); err != nil || string(got) != `"static"` {
		t.Errorf("Eval(document.title) after the errors = %s, %v", got, err)
	}
	if _, err := d.Eval(t.Context(), "  "); err == nil {
		t.Error("Eval(blank) = nil error, want one")
	}
}

func TestEvalDialog(t *testing.T) {
	d := newDisplay(t, DisplayConfig{CommandTimeout: 3 * time.Second})
	load(t, d, "dialogs.html")
	do(t, d, kind(actions.Click, at(100, 50))) // opens an alert
	shoot(t, d)
	start := time.Now()
	_, err := d.Eval(t.Context(), "document.title")
	if !errors.Is(err, ErrUnresponsive) || !strings.Contains(err.Error(), `alert dialog ("Saved!")`) {
		t.Errorf("Eval() with an alert open = %v, want ErrUnresponsive naming the alert", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Eval() with an alert open took %v, want an answer at once", took)
	}
	do(t, d, actions.Action{Kind: actions.Dialog, Accept: true})
	if got, err := d.Eval(t.Context(), "document.title"); err != nil || string(got) != `"alerted"` {
		t.Errorf("Eval(document.title) after the alert = %s, %v; want \"alerted\"", got, err)
	}
}

// TestEvalFollowsActiveTab opens a second tab: Eval reads the page the
// next screenshot shows.
func TestEvalFollowsActiveTab(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "a.html")
	before, err := d.Eval(t.Context(), "location.pathname")
	if err != nil || string(before) != `"/a.html"` {
		t.Fatalf("Eval(location.pathname) = %s, %v; want /a.html", before, err)
	}
	eval[bool](t, d, `window.open("/b.html"), true`)
	shoot(t, d) // follows the new tab
	if got, err := d.Eval(t.Context(), "location.pathname"); err != nil || string(got) != `"/b.html"` {
		t.Errorf("Eval(location.pathname) in the new tab = %s, %v; want /b.html", got, err)
	}
}

func TestEvalHungPage(t *testing.T) {
	integration(t)
	d, err := Open(t.Context(), Config{Logger: testLogger(), Mode: testMode(t), CommandTimeout: time.Second})
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	defer d.Close(context.Background())
	load(t, d, "events.html")
	hang(t, d) // this test is about a page that is already hung
	start := time.Now()
	_, err = d.Eval(t.Context(), "document.title")
	if !errors.Is(err, ErrUnresponsive) {
		t.Errorf("Eval() on a hung page = %v, want ErrUnresponsive", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Eval() on a hung page took %v, want about the 1s command timeout", took)
	}
}

func TestEvalGone(t *testing.T) {
	b := testBrowser(t)
	d, err := b.NewDisplay(t.Context(), DisplayConfig{})
	if err != nil {
		t.Fatalf("NewDisplay() = %v", err)
	}
	if err := d.Close(t.Context()); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, err := d.Eval(t.Context(), "1"); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Eval() on a closed display = %v, want ErrGone", err)
	}
}
