package e2e

// The approval panel in a real browser: a Spotter server (web.New) runs a
// session whose model is the scripted Anthropic fake, on a real Chromium
// display showing testdata/shop.html; a second, ordinary headless Chromium
// (driven with chromedp, as an operator's browser) uses the panel. This test
// file is the one place outside screen/cdp that imports chromedp: it plays
// the operator's browser, which is no Spotter display.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/web"
)

// buyButton is #buy of testdata/shop.html, in CSS px of the session's
// 1280x800 viewport.
var buyButton = image.Rect(500, 300, 660, 360)

// shopViewport is the session display's size (the server's default).
var shopViewport = screen.Size{W: 1280, H: 800}

const panelToken = "panel-test-token"

// panelEnv is one server with its fake model, the shop page, and an
// operator's browser tab.
type panelEnv struct {
	url     string // the Spotter server
	shop    string // the shop page
	model   *anthropictest.Server
	bought  *atomic.Int32 // clicks the shop page reported on Buy
	presses hitLog        // every press the shop page reported (id unused)
	tab     context.Context
}

// buyClick is the model's click on the middle of the Buy button, in the
// pixels of the screenshot it was sent (which is the viewport's size).
func buyClick() actions.Action {
	c := image.Pt((buyButton.Min.X+buyButton.Max.X)/2, (buyButton.Min.Y+buyButton.Max.Y)/2)
	return actions.Action{Kind: actions.Click, At: actions.Point{X: float64(c.X), Y: float64(c.Y)}, HasAt: true}
}

// startPanel starts everything; the model answers with replies.
func startPanel(t *testing.T, replies ...anthropictest.Reply) *panelEnv {
	t.Helper()
	integration(t)
	env := &panelEnv{bought: new(atomic.Int32)}

	shop := serve(t, map[string]http.HandlerFunc{
		"POST /bought": func(w http.ResponseWriter, r *http.Request) { env.bought.Add(1) },
		"POST /press":  env.presses.handler,
	})
	env.shop = shop.URL + "/shop.html"
	env.model = anthropictest.NewServer(t, replies...)

	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := web.New(t.Context(), web.Config{
		DataDir: t.TempDir(),
		Token:   panelToken,
		Logger:  log,
		NewModel: func(ctx context.Context, m session.ModelSpec, img screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			return anthropic.New(anthropic.Config{
				BaseURL: env.model.URL, APIKey: "test", Model: "claude-sonnet-4-5",
				Display: img, Tools: tools, Logger: log,
			})
		},
		ApprovalTimeout: 10 * time.Minute,
		// MCP clients (at /mcp) open the shop, under the default rules.
		MCP: web.MCPConfig{StartURL: env.shop, Rules: approvals.Default()},
	})
	if err != nil {
		t.Fatalf("web.New() = %v", err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	env.url = hs.URL
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("Server.Close() = %v", err)
		}
	})
	env.tab = operatorTab(t)
	return env
}

// operatorTab starts a headless Chromium for the operator, closed when the
// test ends (before the server, so that its event streams end first).
func operatorTab(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the operator's browser: %v (install Debian's chromium)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		acancel()
	})
	// The first call starts the browser; it must run on ctx itself, since
	// chromedp ties the browser to the context of its first call.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start the operator's browser: %v", err)
	}
	return ctx
}

// do runs steps in the operator's tab within timeout; on failure it saves
// a screenshot of the panel and fails the test with what it shows.
func (env *panelEnv) do(t *testing.T, what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(env.tab, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, env.diagnose(t))
	}
}

// eval evaluates a JavaScript expression in the operator's tab.
func eval[T any](t *testing.T, env *panelEnv, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(env.tab, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v\n%s", expr, err, env.diagnose(t))
	}
	return v
}

// diagnose describes the panel's state for a failure message, and saves a
// screenshot of it in the test's artifact directory.
func (env *panelEnv) diagnose(t *testing.T) string {
	ctx, cancel := context.WithTimeout(env.tab, 5*time.Second)
	defer cancel()
	var b strings.Builder
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		p := filepath.Join(t.ArtifactDir(), "panel.png")
		if os.WriteFile(p, png, 0o644) == nil {
			fmt.Fprintf(&b, "screenshot: %s\n", p)
		}
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[location.href,
		'status: ' + (document.getElementById('session-status') || {}).textContent,
		'errors: ' + [...document.querySelectorAll('.error, #conn')].map(e => e.textContent).filter(Boolean).join(' | '),
		'history:\n' + [...document.querySelectorAll('#timeline li')].map(e => '  ' + e.innerText.replace(/\s+/g, ' ')).join('\n')].join('\n')`))
	if err != nil {
		fmt.Fprintf(&b, "panel state: %v", err)
	} else {
		b.WriteString(text)
	}
	return b.String()
}

// login opens the panel, which asks for the token, and logs in.
func (env *panelEnv) login(t *testing.T) {
	t.Helper()
	env.do(t, "log in", 30*time.Second,
		chromedp.Navigate(env.url+"/"),
		chromedp.WaitVisible("#login-token"),
		chromedp.SendKeys("#login-token", panelToken),
		chromedp.Click("#login-form button"),
		chromedp.WaitVisible("#app"),
	)
	if got := eval[bool](t, env, `document.getElementById('login').hidden`); !got {
		t.Fatalf("after logging in, the login form still shows")
	}
}

// markerPoint is where the approval card's marker is drawn, in the pixels
// of the screenshot under it, with that screenshot's size and its size on
// the page.
type markerPoint struct {
	X, Y         float64 // marker centre, in image pixels
	W, H         float64 // the image's own size
	ShownW       float64 // the image's width on the page, CSS px
	TargetName   string
	Rule, Reason string
	ModelText    string
	Timer        string
	ModelHTML    int // elements inside the model text (must be 0)
}

// waitMarker waits for a pending approval card with its marker drawn.
func (env *panelEnv) waitMarker(t *testing.T) markerPoint {
	t.Helper()
	ctx, cancel := context.WithTimeout(env.tab, 60*time.Second)
	defer cancel()
	m, err := chromedp.Run(ctx, chromedp.Poll[markerPoint](`(() => {
		const c = document.querySelector('#approval-list .approval');
		if (!c) return null;
		const img = c.querySelector('.a-shot'), mk = c.querySelector('.a-marker');
		if (!img.complete || !img.naturalWidth || mk.hidden) return null;
		const ir = img.getBoundingClientRect(), mr = mk.getBoundingClientRect();
		if (!ir.width) return null;
		const text = (s) => { const e = c.querySelector(s); return e ? e.textContent : ''; };
		return {
			X: (mr.left + mr.width / 2 - ir.left) * img.naturalWidth / ir.width,
			Y: (mr.top + mr.height / 2 - ir.top) * img.naturalHeight / ir.height,
			W: img.naturalWidth, H: img.naturalHeight, ShownW: ir.width,
			TargetName: text('.t-name'), Rule: text('.a-rule-name'), Reason: text('.a-reason'),
			ModelText: text('.a-model'), Timer: text('.a-timer'),
			ModelHTML: c.querySelector('.a-model').children.length,
		};
	})()`, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		t.Fatalf("wait for a pending approval with its marker: %v\n%s", err, env.diagnose(t))
	}
	return m
}

// checkMarker checks that the card shows the Buy button's request, with
// the marker over the button in the screenshot.
func checkMarker(t *testing.T, m markerPoint, modelText string) {
	t.Helper()
	if m.W <= 0 || m.H <= 0 {
		t.Fatalf("approval screenshot is %vx%v", m.W, m.H)
	}
	// The button's box in the image's pixels: the image is the viewport
	// scaled to the model's size.
	sx, sy := m.W/float64(shopViewport.W), m.H/float64(shopViewport.H)
	minX, maxX := float64(buyButton.Min.X)*sx, float64(buyButton.Max.X)*sx
	minY, maxY := float64(buyButton.Min.Y)*sy, float64(buyButton.Max.Y)*sy
	if m.X < minX || m.X > maxX || m.Y < minY || m.Y > maxY {
		t.Errorf("marker at (%.1f, %.1f) of a %vx%v screenshot, want over the Buy button [%.0f..%.0f]x[%.0f..%.0f]",
			m.X, m.Y, m.W, m.H, minX, maxX, minY, maxY)
	}
	if m.ShownW <= 0 || m.ShownW >= m.W {
		// Not an error of the panel, but then the test would not show that
		// the marker follows a scaled image.
		t.Logf("approval screenshot shown %v px wide for %v image px: not scaled", m.ShownW, m.W)
	}
	if m.TargetName != "Buy" {
		t.Errorf("target name shown = %q, want %q", m.TargetName, "Buy")
	}
	if strings.TrimSpace(m.Rule) == "" || m.Rule == "(none)" {
		t.Errorf("rule shown = %q, want the rule that fired", m.Rule)
	}
	if strings.TrimSpace(m.Reason) == "" || m.Reason == "(none given)" {
		t.Errorf("reason shown = %q, want the rule's reason", m.Reason)
	}
	if !strings.Contains(m.ModelText, modelText) {
		t.Errorf("model's words shown = %q, want them to contain %q", m.ModelText, modelText)
	}
	if m.ModelHTML != 0 {
		t.Errorf("model's words became %d HTML elements, want text only", m.ModelHTML)
	}
	if !strings.HasPrefix(m.Timer, "Decide within") {
		t.Errorf("countdown = %q, want %q...", m.Timer, "Decide within")
	}
}

// waitEnd waits until the history shows the model ending its turn.
func (env *panelEnv) waitEnd(t *testing.T) {
	t.Helper()
	env.do(t, "wait for end_turn in the history", 60*time.Second,
		chromedp.WaitVisible(`#timeline li[data-stop="end_turn"]`))
}

// TestPanelApprove starts a task from the panel; the model clicks Buy, the
// default rules flag it, the operator sees the request with its marker and
// approves, and the session goes on to the end of its turn.
func TestPanelApprove(t *testing.T) {
	const said = "I will buy the <b>teapot</b> now."
	env := startPanel(t,
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.Text(said),
			anthropictest.Action(t, "toolu_buy", anthropic.Computer20250124, buyClick()),
		}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("The teapot is bought.")}},
	)
	env.login(t)

	env.do(t, "start a task from the panel", 30*time.Second,
		chromedp.Click("#new-task-link"),
		chromedp.WaitVisible("#nt-task"),
		chromedp.Click(`#new-task-form input[name="kind"][value="provider"]`),
		chromedp.WaitVisible("#nt-model"),
		chromedp.SendKeys("#nt-task", "Buy the teapot"),
		chromedp.SendKeys("#nt-url", env.shop),
		chromedp.SendKeys("#nt-model", "claude-sonnet-4-5"),
		chromedp.Click(`#new-task-form button[type="submit"]`),
		chromedp.WaitVisible("#session-view"),
	)
	m := env.waitMarker(t)
	t.Logf("marker at (%.1f, %.1f) of a %vx%v screenshot shown %.0f px wide", m.X, m.Y, m.W, m.H, m.ShownW)
	checkMarker(t, m, said)
	if n := env.bought.Load(); n != 0 {
		t.Fatalf("the shop saw %d purchases before the approval, want 0", n)
	}

	env.do(t, "approve", 10*time.Second, chromedp.Click(`#approval-list .approval .approve`))
	env.waitEnd(t)

	if n := env.bought.Load(); n != 1 {
		t.Errorf("the shop saw %d purchases after the approval, want 1", n)
	}
	if got := env.presses.all(); len(got) != 1 || !image.Pt(int(got[0].X), int(got[0].Y)).In(buyButton) {
		t.Errorf("the shop saw presses %v, want one on the Buy button %v", got, buyButton)
	}
	hist := eval[[]string](t, env, `[...document.querySelectorAll('#timeline li')].map(e => e.dataset.type + ':' + (e.dataset.status || e.dataset.stop || ''))`)
	for _, want := range []string{"approval_decided:approved", "tool_result:", "turn_stop:end_turn"} {
		if !slices.Contains(hist, want) {
			t.Errorf("history %q has no %q", hist, want)
		}
	}
	if text := eval[string](t, env, `document.getElementById('timeline').textContent`); !strings.Contains(text, "The teapot is bought.") {
		t.Errorf("history %q does not show the model's last words", text)
	}
	if n := eval[int](t, env, `document.querySelectorAll('#approval-list .approval').length`); n != 0 {
		t.Errorf("%d approval cards still shown after approving, want 0", n)
	}
}

// TestPanelDeny creates a session over the API; the operator finds it in
// the panel's list and denies the click with a reason, which the model
// receives in its tool_result.
func TestPanelDeny(t *testing.T) {
	const reason = "Too expensive: do not buy it"
	env := startPanel(t,
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.Text("Buying the teapot."),
			anthropictest.Action(t, "toolu_buy", anthropic.Computer20250124, buyClick()),
		}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Understood, I did not buy it.")}},
	)
	id := env.createSession(t, "Buy the teapot")
	env.login(t)

	env.do(t, "open the session from the list", 30*time.Second,
		chromedp.Click(fmt.Sprintf(`#session-list a[data-session=%q]`, id)),
		chromedp.WaitVisible("#session-view"),
	)
	checkMarker(t, env.waitMarker(t), "Buying the teapot.")
	env.do(t, "deny with a reason", 10*time.Second,
		chromedp.SendKeys(`#approval-list .approval .deny-reason`, reason),
		chromedp.Click(`#approval-list .approval .deny`),
	)
	env.waitEnd(t)

	if n, got := env.bought.Load(), env.presses.all(); n != 0 || len(got) != 0 {
		t.Errorf("the shop saw %d purchases and presses %v after a denial, want none", n, got)
	}
	hist := eval[[]string](t, env, `[...document.querySelectorAll('#timeline li')].map(e => e.dataset.type + ':' + (e.dataset.status || e.dataset.stop || ''))`)
	if !slices.Contains(hist, "approval_decided:denied") {
		t.Errorf("history %q has no denial", hist)
	}

	// The model's second request carries the tool_result of the denied
	// call, with the operator's reason in it.
	reqs := env.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	res, ok := toolResult(t, reqs[1].Body, "toolu_buy")
	if !ok {
		t.Fatalf("the model's second request has no tool_result for toolu_buy:\n%s", reqs[1].Body)
	}
	if !strings.Contains(string(res), reason) {
		t.Errorf("tool_result for toolu_buy = %s, want it to contain %q", res, reason)
	}
}

// TestPanelEdit has the operator move the flagged click off the Buy button
// by clicking elsewhere on the request's screenshot; the edited click runs
// instead of the model's.
func TestPanelEdit(t *testing.T) {
	env := startPanel(t,
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.Text("Buying the teapot."),
			anthropictest.Action(t, "toolu_buy", anthropic.Computer20250124, buyClick()),
		}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("I clicked where you said.")}},
	)
	id := env.createSession(t, "Buy the teapot")
	env.login(t)
	env.do(t, "open the session", 30*time.Second,
		chromedp.Navigate(env.url+"/#/session/"+id),
		chromedp.WaitVisible("#session-view"),
	)
	env.waitMarker(t)
	env.do(t, "open the editor", 10*time.Second, chromedp.Click(`#approval-list .approval .edit-toggle`))

	// Aim at an empty spot left of the button (viewport (200, 500)), with
	// the screenshot on screen (opening the editor focuses its fields).
	ctx, cancel := context.WithTimeout(env.tab, 10*time.Second)
	defer cancel()
	p, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(`(() => {
		const img = document.querySelector('#approval-list .approval .a-shot');
		img.scrollIntoView({block: 'center', behavior: 'instant'});
		const r = img.getBoundingClientRect();
		const ix = 200 * img.naturalWidth / %d, iy = 500 * img.naturalHeight / %d;
		return [r.left + ix * r.width / img.naturalWidth, r.top + iy * r.height / img.naturalHeight,
		        ix, iy, img.naturalWidth / r.width];
	})()`, shopViewport.W, shopViewport.H)))
	if err != nil || len(p) != 5 {
		t.Fatalf("find a point on the request's screenshot: %v %v\n%s", p, err, env.diagnose(t))
	}
	env.do(t, "move the point", 10*time.Second,
		chromedp.MouseClickXY(p[0], p[1]),
		chromedp.WaitVisible(`#approval-list .approval .edit-marker`),
	)
	sent := eval[[]float64](t, env, `[Number(document.querySelector('#approval-list .edit-x').value), Number(document.querySelector('#approval-list .edit-y').value)]`)
	if len(sent) != 2 || math.Abs(sent[0]-p[2]) > p[4]+1 || math.Abs(sent[1]-p[3]) > p[4]+1 {
		t.Fatalf("edited point = %v, want within %.1f px of (%.1f, %.1f)", sent, p[4]+1, p[2], p[3])
	}
	env.do(t, "approve the edit", 10*time.Second, chromedp.Click(`#approval-list .approval .edit-send`))
	env.waitEnd(t)

	if n := env.bought.Load(); n != 0 {
		t.Errorf("the shop saw %d purchases, want 0: the edited click is off the button", n)
	}
	// The press lands on the edited point (image px, here the viewport's).
	if got := env.presses.all(); len(got) != 1 || math.Abs(got[0].X-sent[0]) > 1 || math.Abs(got[0].Y-sent[1]) > 1 {
		t.Errorf("the shop saw presses %v, want one at the edited point %v", got, sent)
	}
	hist := eval[[]string](t, env, `[...document.querySelectorAll('#timeline li')].map(e => e.dataset.type + ':' + (e.dataset.status || e.dataset.stop || ''))`)
	if !slices.Contains(hist, "approval_decided:edited") {
		t.Errorf("history %q has no edited decision", hist)
	}
}

// TestPanelTakeover has the operator take over while the model's click
// on Buy waits for approval, click Buy on the live view themselves, hand
// back and deny the model's click: the model hears that a human acted.
// Then the operator sends the model a message from the panel.
func TestPanelTakeover(t *testing.T) {
	const reason = "I bought it myself"
	env := startPanel(t,
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.Text("Buying the teapot."),
			anthropictest.Action(t, "toolu_buy", anthropic.Computer20250124, buyClick()),
		}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Fine, you bought it.")}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("The page says Bought.")}},
	)
	id := env.createSession(t, "Buy the teapot")
	env.login(t)
	env.do(t, "open the session and take over", 60*time.Second,
		chromedp.Navigate(env.url+"/#/session/"+id),
		chromedp.WaitVisible("#session-view"),
	)
	env.waitMarker(t)
	env.do(t, "take over", 30*time.Second,
		chromedp.WaitVisible("#live-img"),
		chromedp.Click("#takeover"),
		chromedp.WaitVisible("#handback"),
		chromedp.ScrollIntoView("#live-img"),
	)
	// Click the live screenshot where it shows the Buy button: the
	// button's middle in image pixels, then in CSS px of the page.
	c := buyClick().At
	ctx, cancel := context.WithTimeout(env.tab, 10*time.Second)
	defer cancel()
	p, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(`(() => {
		const img = document.getElementById('live-img');
		img.dataset.before = img.src;
		const r = img.getBoundingClientRect();
		// A point of the session's screenshots (the live frame on show
		// may be smaller), at the same fraction of the frame.
		const ix = %v, iy = %v, w = %d, h = %d;
		return [r.left + ix * r.width / w, r.top + iy * r.height / h, ix, iy, w / r.width];
	})()`, c.X, c.Y, shopViewport.W, shopViewport.H)))
	if err != nil || len(p) != 5 {
		t.Fatalf("find the Buy button on the live view: %v %v\n%s", p, err, env.diagnose(t))
	}
	env.do(t, "click the live view", 30*time.Second,
		chromedp.MouseClickXY(p[0], p[1]),
		// The answer's fresh screenshot replaces the live image.
		chromedp.Poll[chromedp.Void](`(() => { const i = document.getElementById('live-img'); return i.src.startsWith('data:') && i.src !== i.dataset.before && i.complete; })()`),
	)
	if n := env.bought.Load(); n != 1 {
		t.Errorf("the shop saw %d purchases after the operator's click, want 1", n)
	}
	// The operator's own click is in the history, as the server recorded it.
	env.do(t, "see the operator's click in the history", 30*time.Second,
		chromedp.WaitVisible(`#timeline li[data-type="operator_input"]`))
	if got := eval[string](t, env, `document.querySelector('#timeline li[data-type="operator_input"]').innerText`); !strings.Contains(got, "Operator") || !strings.Contains(got, "click at (") {
		t.Errorf("history shows the operator's input as %q, want the operator's click", got)
	}
	// The point sent is the image pixel under the pointer: within one CSS
	// pixel of the page (p[4] image px) of the one aimed at.
	sent := eval[[]float64](t, env, `[Number(document.getElementById('tk-x').value), Number(document.getElementById('tk-y').value)]`)
	if len(sent) != 2 || math.Abs(sent[0]-p[2]) > p[4]+1 || math.Abs(sent[1]-p[3]) > p[4]+1 {
		t.Errorf("operator's click sent at %v, want within %.1f px of (%.1f, %.1f)", sent, p[4]+1, p[2], p[3])
	}
	env.do(t, "hand back and deny the model's click", 60*time.Second,
		chromedp.Click("#handback"),
		chromedp.WaitVisible("#takeover"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#timeline li[data-type="takeover"]').length === 2`),
		chromedp.SendKeys(`#approval-list .approval .deny-reason`, reason),
		chromedp.Click(`#approval-list .approval .deny`),
		chromedp.WaitVisible(`#timeline li[data-stop="end_turn"]`),
	)
	if n := env.bought.Load(); n != 1 {
		t.Errorf("the shop saw %d purchases, want only the operator's", n)
	}
	reqs := env.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	res, ok := toolResult(t, reqs[1].Body, "toolu_buy")
	if !ok {
		t.Fatalf("the model's second request has no tool_result for toolu_buy:\n%s", stripImages(reqs[1].Body))
	}
	for _, want := range []string{reason, session.HumanActed} {
		if !strings.Contains(string(res), want) {
			t.Errorf("tool_result for toolu_buy = %s, want it to contain %q", stripImages(res), want)
		}
	}

	// A message from the panel starts the next turn.
	const msg = "Check the page, please."
	env.do(t, "send a message", 60*time.Second,
		chromedp.SendKeys("#msg-text", msg),
		chromedp.Click(`#msg-form button[type="submit"]`),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#timeline li[data-stop="end_turn"]').length === 2`),
	)
	if reqs := env.model.Requests(); len(reqs) != 3 || !strings.Contains(string(reqs[2].Body), msg) {
		t.Errorf("the model got %d requests, want 3, the last with %q", len(reqs), msg)
	}
}

// stripImages shortens base64 image data in JSON for a failure message.
func stripImages(b []byte) string {
	return regexp.MustCompile(`"data":"[^"]*"`).ReplaceAllString(string(b), `"data":"..."`)
}

// createSession starts a session over the API, as a client would, and
// returns its id. The response stream is read to its end in the background
// until the test ends.
func (env *panelEnv) createSession(t *testing.T, task string) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"title":     task,
		"messages":  []map[string]any{{"role": "user", "content": task}},
		"model":     map[string]any{"provider": "anthropic", "name": "claude-sonnet-4-5"},
		"start_url": env.shop,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, env.url+"/session", strings.NewReader(string(body)))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+panelToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("PUT /session: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("PUT /session: %s %s", resp.Status, b)
	}
	id := resp.Header.Get("X-Session-Id")
	sc := bufio.NewScanner(resp.Body)
	for id == "" && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v struct {
				SessionID string `json:"sessionId"`
			}
			if json.Unmarshal([]byte(data), &v) == nil {
				id = v.SessionID
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if id == "" {
		t.Fatalf("PUT /session named no session (no X-Session-Id, no session event)")
	}
	return id
}

// toolResult finds the tool_result block for id in an Anthropic Messages
// request body and returns its content.
func toolResult(t *testing.T, body []byte, id string) (json.RawMessage, bool) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("decode model request: %v", err)
	}
	for _, m := range req.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return b.Content, true
			}
		}
	}
	return nil, false
}
