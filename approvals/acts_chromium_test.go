package approvals_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/playwright"
)

// browserDisplay is what this test asks of a browser display: the
// gate's hit-test and focus, and a way to load a page and see it.
type browserDisplay interface {
	approvals.HitTester
	approvals.FocusReporter
	Perform(context.Context, screen.Mapped) error
	Capture(context.Context, screen.CaptureOptions) (screen.Shot, error)
}

// actsCase is a page with one element at .c (CSS 100,100 to 300,160),
// clicked at its centre, or, with key set, pressed on once .c has the
// focus. rule is the built-in rule that must flag it ("": none).
type actsCase struct {
	name string
	body string
	key  string
	rule string
}

var actsCases = []actsCase{
	// Elements that act when clicked, by their markup or by a script.
	{"a div with role=button", `<div class=c role=button tabindex=0>Buy now</div>`, "", approvals.RulePurchase},
	{"an onclick handler in the markup", `<div class=c onclick="void 0">Buy now</div>`, "", approvals.RulePurchase},
	{"a click listener a script added", `<div class=c id=x>Buy now</div>
<script>document.getElementById("x").addEventListener("click", () => {});</script>`, "", approvals.RulePurchase},
	{"a pointerdown listener on the parent of the text", `<div class=c id=x><span style="display:block;height:60px">Delete it</span></div>
<script>document.getElementById("x").addEventListener("pointerdown", () => {});</script>`, "", approvals.RuleDelete},
	{"a label wrapping a checkbox", `<label class=c><input type=checkbox style="margin:0 8px 0 0">Buy the extended warranty</label>`,
		"", approvals.RulePurchase},
	{"a span inside a button", `<button class=c><span>Buy now</span></button>`, "", approvals.RulePurchase},
	{"an element with a pointer cursor", `<div class=c style="cursor:pointer"><p style="margin:0;line-height:60px">Buy now</p></div>`,
		"", approvals.RulePurchase},
	{"an element inside a link", `<a class=c href="/elsewhere"><span><b>Buy now</b></span></a>`, "", approvals.RulePurchase},
	{"a shadow root's text whose host listens", `<x-buy class=c id=x></x-buy>
<script>const h = document.getElementById("x"); h.attachShadow({mode: "open"}).innerHTML = "<span style=\"display:block;height:60px\">Buy now</span>";
h.addEventListener("click", () => {});</script>`, "", approvals.RulePurchase},
	{"a submit whose form posts to a purchase endpoint", `<form action="/checkout/pay" method=post><button class=c>Continue</button></form>`,
		"", approvals.RulePurchase},
	{"Enter in a field whose form's button buys", `<form action="/cart" method=post><input class=c name=qty type=number value=1>
<button style="position:absolute;top:300px">Place order</button></form>`, "Enter", approvals.RulePurchase},

	// Static text: nothing acts, whatever it says.
	{"static text", `<p class=c>Thank you for your purchase!</p>`, "", ""},
	{"a heading", `<h1 class=c style="font-size:16px">Complete your purchase</h1>`, "", ""},
	{"static text under listeners on the page and a root container", `<div id=root><p class=c>Thank you for your purchase!</p>
<p>Your order number is 1234. A receipt is on its way to your inbox; keep it for your records.</p></div>
<script>for (const t of [document, document.body, document.getElementById("root")]) t.addEventListener("click", () => {});</script>`,
		"", ""},
	{"a label with no control", `<label class=c>Delete</label>`, "", ""},
	{"static text in a checkout form", `<form action="/checkout/pay" method=post><p class=c>Pay with care</p></form>`, "", ""},
	{"a button that does not submit, in a checkout form", `<form action="/checkout/pay" method=post><button class=c type=button>Show terms</button></form>`,
		"", ""},
	{"Enter in a search form", `<form action="/search"><input class=c name=q type=search><button style="position:absolute;top:300px">Search</button></form>`,
		"Enter", ""},
}

// TestRulesAskWhenItActsOnChromium: the built-in word rules flag a click
// on an element that acts when clicked (a control, an element a script
// or its markup makes clickable, a label of a control, what a form
// submits), and not a click on static text, whatever it says. Each case
// runs through a real display's hit-test and the gate, on screen/cdp and
// on screen/playwright.
func TestRulesAskWhenItActsOnChromium(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against a real Chromium")
	}
	mux := http.NewServeMux()
	for i, c := range actsCases {
		mux.HandleFunc(fmt.Sprintf("/case/%d", i), func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><style>body { margin: 0; font: 16px sans-serif; }
.c { position: absolute; left: 100px; top: 100px; width: 200px; height: 60px; margin: 0; display: block; }</style></head><body>`+c.body+`</body></html>`)
		})
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	displays := []struct {
		name string
		open func(context.Context) (browserDisplay, func(), error)
	}{
		{"cdp", func(ctx context.Context) (browserDisplay, func(), error) {
			d, err := cdp.Open(ctx, cdp.Config{})
			if err != nil {
				return nil, nil, err
			}
			return d, func() { d.Close(context.Background()) }, nil
		}},
		{"playwright", func(ctx context.Context) (browserDisplay, func(), error) {
			d, err := playwright.Open(ctx, playwright.Config{DriverDir: os.Getenv("SPOTTER_PLAYWRIGHT_DRIVER")})
			if err != nil {
				return nil, nil, err
			}
			return d, func() { d.Close(context.Background()) }, nil
		}},
	}
	for _, disp := range displays {
		t.Run(disp.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			d, closeDisplay, err := disp.open(ctx)
			cancel()
			if err != nil {
				t.Fatalf("open a %s display: %v", disp.name, err)
			}
			defer closeDisplay()
			for i, c := range actsCases {
				t.Run(c.name, func(t *testing.T) {
					if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: fmt.Sprintf("%s/case/%d", srv.URL, i)}}); err != nil {
						t.Fatalf("navigate: %v", err)
					}
					shot, err := d.Capture(t.Context(), screen.CaptureOptions{Size: screen.Size{W: 1280, H: 800}})
					if err != nil {
						t.Fatalf("Capture() = %v", err)
					}
					click := actions.Action{Kind: actions.Click, At: actions.Pt(200, 130), HasAt: true}
					a := click
					if c.key != "" {
						m, err := shot.Frame.Map(click, screen.Image)
						if err != nil {
							t.Fatal(err)
						}
						if err := d.Perform(t.Context(), m); err != nil {
							t.Fatalf("click to focus: %v", err)
						}
						a = actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Key(c.key)}}
					}
					req := harness.ApprovalRequest{CallID: "call_1", Action: a, Frame: shot.Frame}
					if a.Kind.IsPointer() {
						m, err := shot.Frame.Map(a, screen.Image)
						if err != nil {
							t.Fatal(err)
						}
						req.Mapped = &m
					}
					var asked *approvals.Request
					refuse := errors.New("refused by the test")
					q := approvals.NewQueue(approvals.QueueConfig{OnRequest: func(r approvals.Request) error {
						asked = &r
						return refuse
					}})
					g := newGate(t, approvals.GateConfig{Queue: q, HitTester: d, Session: "s1"})
					_, err = g.Approve(t.Context(), req)
					switch {
					case c.rule == "" && asked != nil:
						t.Errorf("%s was flagged (%s: %s), want it to run without a human; target %+v", a.Kind, asked.Rule, asked.Reason, asked.Target)
					case c.rule == "" && err != nil:
						t.Errorf("Approve() = %v, want nil", err)
					case c.rule != "" && asked == nil:
						t.Errorf("%s was not flagged (Approve() = %v), want rule %s", a.Kind, err, c.rule)
					case c.rule != "" && asked.Rule != c.rule:
						t.Errorf("%s flagged by %s (%s), want %s; target %+v", a.Kind, asked.Rule, asked.Reason, c.rule, asked.Target)
					case c.rule != "" && !errors.Is(err, refuse):
						t.Errorf("Approve() = %v, want the queue's refusal", err)
					}
					if asked != nil {
						t.Logf("flagged: %s", asked.Reason)
					}
				})
			}
		})
	}
}
