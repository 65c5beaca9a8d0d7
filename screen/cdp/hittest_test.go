package cdp

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// The approval gate's view of a display, restated here so that this
// package does not import approvals.
var _ interface {
	HitTest(context.Context, actions.Point) (screen.Target, error)
	Focused(context.Context) (screen.Target, error)
} = (*Display)(nil)

// loadHitTest loads testdata/hittest.html and waits for both its iframes
// (one same-origin, one from another site) to load. It does not require
// the page to settle: in Screencast mode an out-of-process iframe's
// document request never finishes as the page's target sees it.
func loadHitTest(t *testing.T, d *Display) (origin, other string) {
	t.Helper()
	do(t, d, actions.Action{Kind: actions.Navigate, URL: testURL(t, "hittest.html")})
	if _, err := d.Capture(t.Context(), screen.CaptureOptions{Size: screen.Size{W: 64, H: 40}, SettleTimeout: time.Second}); err != nil {
		t.Fatalf("Capture() after loading hittest.html = %v", err)
	}
	eval[int](t, d, "window.ready")
	origin = strings.TrimSuffix(testURL(t, ""), "/")
	other = strings.Replace(origin, "127.0.0.1", "localhost", 1)
	return origin, other
}

func TestHitTest(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	origin, other := loadHitTest(t, d)
	if infos, err := chromedp.Targets(d.ctx); err == nil {
		for _, info := range infos {
			if info.Type == "iframe" {
				t.Logf("out-of-process iframe: %s", info.URL)
			}
		}
	}
	tests := []struct {
		name string
		at   actions.Point
		want screen.Target
	}{
		{"buy button (on its inner span)", actions.Pt(70, 40), screen.Target{
			Tag: "button", Role: "button", Name: "Buy now", InputType: "submit", Text: "Buy now", Acts: true}},
		{"password field", actions.Pt(60, 95), screen.Target{
			Tag: "input", Role: "textbox", Name: "Password", InputType: "password", Autocomplete: "current-password",
			Editable: true, FormAction: origin + "/login", FormMethod: "post", Acts: true}},
		{"label of the card number field", actions.Pt(25, 140), screen.Target{
			Tag: "input", Role: "textbox", Name: "Card number", InputType: "text", Autocomplete: "cc-number",
			Editable: true, FormAction: "https://payments.example/charge", FormMethod: "post", Acts: true, FormSubmit: "Pay 10 €"}},
		{"payment field without a label", actions.Pt(40, 175), screen.Target{
			Tag: "input", Role: "textbox", Name: "CVC", InputType: "text", Editable: true, Text: "CVC",
			FormAction: "https://payments.example/charge", FormMethod: "post", Acts: true, FormSubmit: "Pay 10 €"}},
		{"pay button", actions.Pt(140, 175), screen.Target{
			Tag: "input", Role: "button", Name: "Pay 10 €", InputType: "submit", Text: "Pay 10 €",
			FormAction: "https://payments.example/charge", FormMethod: "post", Acts: true, FormSubmit: "Pay 10 €"}},
		{"external link", actions.Pt(30, 207), screen.Target{
			Tag: "a", Role: "link", Name: "Visit partner", Href: "https://external.example/page", LinkTarget: "_blank",
			Text: "Visit partner", Acts: true}},
		{"download link", actions.Pt(30, 237), screen.Target{
			Tag: "a", Role: "link", Name: "Download report", Href: origin + "/report.pdf", Download: true,
			Text: "Download report", Acts: true}},
		{"file input", actions.Pt(100, 275), screen.Target{
			Tag: "input", Name: "Attach a file", InputType: "file", Acts: true}},
		{"plain text", actions.Pt(50, 340), screen.Target{Tag: "div", Text: "Just some text"}},
		{"same-origin iframe", actions.Pt(350, 50), screen.Target{
			Tag: "button", Role: "button", Name: "Delete account", InputType: "submit", Text: "🗑",
			FrameURL: origin + "/hittest-frame.html", Acts: true}},
		{"cross-site iframe", actions.Pt(350, 290), screen.Target{
			Tag: "button", Role: "button", Name: "Delete account", InputType: "submit", Text: "🗑",
			FrameURL: other + "/hittest-frame.html", Acts: true}},
		{"link in a cross-site iframe", actions.Pt(325, 377), screen.Target{
			Tag: "a", Role: "link", Name: "Elsewhere", Href: "https://elsewhere.example/", Text: "Elsewhere",
			FrameURL: other + "/hittest-frame.html", Acts: true}},
		{"outside the page", actions.Pt(5000, 5000), screen.Target{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.HitTest(t.Context(), tt.at)
			if err != nil {
				t.Fatalf("HitTest(%v) = %v", tt.at, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("HitTest(%v) (-want +got):\n%s", tt.at, diff)
			}
		})
	}
	if _, err := d.HitTest(t.Context(), actions.Pt(math.NaN(), 1)); !errors.Is(err, actions.ErrInvalid) {
		t.Errorf("HitTest(NaN) = %v, want ErrInvalid", err)
	}
}

func TestFocused(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	_, _ = loadHitTest(t, d)
	got, err := d.Focused(t.Context())
	if err != nil || got != (screen.Target{}) {
		t.Errorf("Focused() with nothing focused = %+v, %v; want the zero Target", got, err)
	}
	eval[int](t, d, `document.querySelector("[name=cardnumber]").focus(), 1`)
	got, err = d.Focused(t.Context())
	if err != nil {
		t.Fatalf("Focused() = %v", err)
	}
	want := screen.Target{Tag: "input", Role: "textbox", Name: "Card number", InputType: "text",
		Autocomplete: "cc-number", Editable: true, FormAction: "https://payments.example/charge", FormMethod: "post",
		Acts: true, FormSubmit: "Pay 10 €"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Focused() on the card number field (-want +got):\n%s", diff)
	}
	// Typing through the display reaches the element Focused names.
	do(t, d, actions.Action{Kind: actions.Type, Text: "4"})
	if v := eval[string](t, d, `document.querySelector("[name=cardnumber]").value`); v != "4" {
		t.Errorf("card number field value after typing = %q, want %q", v, "4")
	}
}

func TestHitTestHugeDOM(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "a.html")
	eval[int](t, d, `(() => {
		const b = document.createElement("button");
		b.style.cssText = "position:absolute; left:0; top:0; width:300px; height:100px; overflow:hidden";
		b.setAttribute("aria-label", "Big");
		for (let i = 0; i < 50000; i++) b.appendChild(document.createElement("span")).textContent = "word" + i + " ";
		document.body.appendChild(b);
		return 1;
	})()`)
	start := time.Now()
	eval[int](t, d, "document.body.getBoundingClientRect().height, 1")
	t.Logf("layout took %v", time.Since(start))
	start = time.Now()
	eval[int](t, d, "HTMLDocument.prototype.elementFromPoint.call(document, 150, 50) ? 1 : 0")
	t.Logf("elementFromPoint took %v", time.Since(start))
	start = time.Now()
	got, err := d.HitTest(t.Context(), actions.Pt(150, 50))
	if err != nil {
		t.Fatalf("HitTest() on a 50000-element button = %v", err)
	}
	t.Logf("hit-test took %v", time.Since(start))
	if got.Name != "Big" || got.Tag != "button" || len([]rune(got.Text)) > 200 || !strings.HasPrefix(got.Text, "word0 word1") {
		t.Errorf("HitTest() on a 50000-element button = %+v, want the button, its text clipped to 200 characters", got)
	}
}

func TestHitTestHungPage(t *testing.T) {
	integration(t)
	d, err := Open(t.Context(), Config{Logger: testLogger(), Mode: testMode(t), CommandTimeout: time.Second})
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	defer d.Close(context.Background())
	load(t, d, "a.html")
	hang(t, d) // this test is about a page that is already hung
	_, err = d.HitTest(t.Context(), actions.Pt(10, 10))
	if !errors.Is(err, ErrUnresponsive) {
		t.Errorf("HitTest() on a hung page = %v, want ErrUnresponsive", err)
	}
}
