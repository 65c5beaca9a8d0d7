package playwright

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// What the harness and the approval gate ask of a browser display.
var (
	_ harness.Inspector       = (*Display)(nil)
	_ approvals.HitTester     = (*Display)(nil)
	_ approvals.FocusReporter = (*Display)(nil)
)

// hitPages serves a page with a form, a link and two iframes: one of the
// same origin, one of another site (localhost instead of 127.0.0.1). The
// page replaces document.elementFromPoint, which a hit-test must not use.
func hitPages(t *testing.T) (origin, other string) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	origin = srv.URL
	other = strings.Replace(origin, "127.0.0.1", "localhost", 1)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><meta charset=utf-8><style>*{margin:0} .at{position:absolute}</style>
<script>document.elementFromPoint = () => document.body; Element.prototype.closest = () => null;</script>
<form action="/login" method="post">
<button class=at style="left:10px;top:10px;width:120px;height:40px"><span>Buy now</span></button>
<label class=at for=pw style="left:10px;top:80px">Password</label>
<input class=at id=pw type=password autocomplete=current-password style="left:100px;top:70px;width:150px;height:30px">
</form>
<a class=at href="https://external.example/page" target=_blank style="left:10px;top:140px">Visit partner</a>
<div class=at style="left:10px;top:200px">Just some text</div>
<iframe class=at src="/inner" style="left:300px;top:0;width:300px;height:100px;border:0"></iframe>
<iframe class=at src="%s/inner" style="left:300px;top:150px;width:300px;height:100px;border:0"></iframe>`, other)
	})
	mux.HandleFunc("/inner", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><meta charset=utf-8><style>*{margin:0}</style><button style="width:200px;height:60px">Delete account</button>`)
	})
	return origin, other
}

// TestHitTest checks HitTest and Focused on launched and connected
// displays.
func TestHitTest(t *testing.T) {
	for _, mode := range []string{"launched", "connected"} {
		t.Run(mode, func(t *testing.T) {
			d := displayIn(t, mode)
			origin, other := hitPages(t)
			load(t, d, origin+"/")
			tests := []struct {
				name string
				at   actions.Point
				want screen.Target
			}{
				{"buy button (on its inner span)", actions.Pt(70, 30), screen.Target{
					Tag: "button", Role: "button", Name: "Buy now", InputType: "submit", Text: "Buy now",
					FormAction: origin + "/login", FormMethod: "post", Acts: true, FormSubmit: "Buy now"}},
				{"password field", actions.Pt(150, 85), screen.Target{
					Tag: "input", Role: "textbox", Name: "Password", InputType: "password", Autocomplete: "current-password",
					Editable: true, FormAction: origin + "/login", FormMethod: "post", Acts: true, FormSubmit: "Buy now"}},
				{"external link", actions.Pt(30, 145), screen.Target{
					Tag: "a", Role: "link", Name: "Visit partner", Href: "https://external.example/page", LinkTarget: "_blank",
					Text: "Visit partner", Acts: true}},
				{"plain text", actions.Pt(30, 205), screen.Target{Tag: "div", Text: "Just some text"}},
				{"same-origin iframe", actions.Pt(350, 20), screen.Target{
					Tag: "button", Role: "button", Name: "Delete account", InputType: "submit", Text: "Delete account",
					FrameURL: origin + "/inner", Acts: true}},
				// Another site's frame runs in a process of its own.
				{"cross-site iframe", actions.Pt(350, 170), screen.Target{
					Tag: "button", Role: "button", Name: "Delete account", InputType: "submit", Text: "Delete account",
					FrameURL: other + "/inner", Acts: true}},
			}
			for _, tt := range tests {
				got, err := d.HitTest(t.Context(), tt.at)
				if err != nil {
					t.Errorf("%s: HitTest(%v) = %v", tt.name, tt.at, err)
					continue
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s: HitTest(%v) (-want +got):\n%s", tt.name, tt.at, diff)
				}
			}
			// Off every element: the document, as screen/cdp says too.
			if got, err := d.HitTest(t.Context(), actions.Pt(700, 500)); err != nil || got.Tag != "html" || got.Editable {
				t.Errorf("HitTest((700,500)) off every element = %+v, %v; want the html element", got, err)
			}

			if got, err := d.Focused(t.Context()); err != nil || got != (screen.Target{}) {
				t.Errorf("Focused() before any click = %+v, %v; want the zero Target", got, err)
			}
			perform(t, d, click(150, 85))
			got, err := d.Focused(t.Context())
			if err != nil || got.InputType != "password" || !got.SecretField() {
				t.Errorf("Focused() after a click on the password field = %+v, %v; want the password field", got, err)
			}
			perform(t, d, actions.Action{Kind: actions.Type, Text: "hunter2"})
			got, err = d.Focused(t.Context())
			if err != nil || strings.Contains(fmt.Sprint(got), "hunter2") {
				t.Errorf("Focused() after typing a password = %+v, %v; want no typed value", got, err)
			}
		})
	}
}

// TestHitTestGone checks that a hit-test on a closed display fails with
// ErrGone.
func TestHitTestGone(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.HitTest(t.Context(), actions.Pt(1, 1)); !errors.Is(err, screen.ErrGone) {
		t.Errorf("HitTest() after Close = %v, want ErrGone", err)
	}
	if _, err := d.Focused(t.Context()); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Focused() after Close = %v, want ErrGone", err)
	}
}
