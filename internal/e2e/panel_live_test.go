package e2e

// The panel over a session's whole life, in the operator's real Chromium:
// logged out, a long session that waits for a decision (reloaded), the
// same at a phone's width, the finished session with its report, and all
// of it again after the server restarts on the same data. Every screen is
// checked for console errors (a failed request shows as one).

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/store"
	"github.com/spotter-harness/spotter/web"
)

// consoleLog records what the operator's tab logs as an error or a
// warning, with the screen it was on.
type consoleLog struct {
	mu     sync.Mutex
	screen string
	errs   []string
}

func (c *consoleLog) on(ev any) {
	var what string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		what = "exception: " + ev.ExceptionDetails.Text
		if e := ev.ExceptionDetails.Exception; e != nil {
			what += " " + e.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeWarning {
			return
		}
		var args []string
		for _, a := range ev.Args {
			args = append(args, string(a.Value)+a.Description)
		}
		what = "console." + string(ev.Type) + ": " + strings.Join(args, " ")
	case *log.EventEntryAdded:
		if e := ev.Entry; e != nil && (e.Level == log.EntryLevelError || e.Level == log.EntryLevelWarning) {
			what = string(e.Source) + " " + string(e.Level) + ": " + e.Text + " " + e.URL
		}
	}
	if what == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, c.screen+": "+what)
}

// at names the screen the tab shows from now on.
func (c *consoleLog) at(screen string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.screen = screen
}

func (c *consoleLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.errs
	c.errs = nil
	return out
}

// livePanel is a server on a data directory that outlives it, a fake
// model, the shop page, and an operator's tab whose console is watched.
type livePanel struct {
	*panelEnv
	t       *testing.T
	cfg     web.Config
	st      store.Store
	srv     *web.Server
	hs      *httptest.Server
	console *consoleLog
}

func startLivePanel(t *testing.T, replies ...anthropictest.Reply) *livePanel {
	t.Helper()
	integration(t)
	env := &panelEnv{}
	shop := serve(t, nil)
	env.shop = shop.URL + "/shop.html"
	env.model = anthropictest.NewServer(t, replies...)
	dir := t.TempDir()
	st, err := store.Open(t.Context(), filepath.Join(dir, "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	lg := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	p := &livePanel{panelEnv: env, t: t, st: st, console: &consoleLog{}}
	p.cfg = web.Config{
		DataDir: dir, Token: panelToken, Logger: lg, Store: st, ApprovalTimeout: 10 * time.Minute,
		NewModel: func(ctx context.Context, m session.ModelSpec, img screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			return anthropic.New(anthropic.Config{BaseURL: env.model.URL, APIKey: "test", Model: "claude-sonnet-4-5",
				Display: img, Tools: tools, Logger: lg})
		},
	}
	p.start()
	t.Cleanup(p.stop)
	tab, closeTab := chromedp.NewContext(operatorTab(t), chromedp.WithListener(p.console.on))
	t.Cleanup(closeTab)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open the operator's tab: %v", err)
	}
	env.tab = tab
	return p
}

// start starts the server on the panel's data, at the address it had.
func (p *livePanel) start() {
	p.t.Helper()
	srv, err := web.New(p.t.Context(), p.cfg)
	if err != nil {
		p.t.Fatalf("web.New() = %v", err)
	}
	if err := srv.Start(p.t.Context()); err != nil {
		p.t.Fatalf("Start: %v", err)
	}
	p.srv = srv
	if p.hs == nil {
		p.hs = httptest.NewServer(srv.Handler())
		p.url = p.hs.URL
		return
	}
	p.hs.Config.Handler = srv.Handler()
}

// stop stops the server as a shutdown would; its address stays.
func (p *livePanel) stop() {
	if p.srv == nil {
		return
	}
	p.hs.CloseClientConnections()
	if err := p.srv.Close(context.Background()); err != nil {
		p.t.Errorf("Server.Close() = %v", err)
	}
	p.srv = nil
}

// screen names the screen the tab shows from now on, and fails the test
// if the screen before logged an error.
func (p *livePanel) screen(name string) {
	p.t.Helper()
	for _, e := range p.console.take() {
		p.t.Errorf("console: %s", e)
	}
	p.console.at(name)
	p.snap(p.t, "live-"+name)
}

// historyRow is one entry of the panel's history.
type historyRow struct {
	Type, Time string
}

// checkHistory checks that the history shows one row per stored event of
// session id, each at the time the event was stored, and that it is
// scrolled to its newest row.
func (p *livePanel) checkHistory(id, when string) {
	p.t.Helper()
	evs, err := p.st.Events(p.t.Context(), id, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	want := len(evs)
	p.do(p.t, "wait for the history of "+when, 60*time.Second, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`document.querySelectorAll('#timeline li').length >= %d`, want)))
	rows := eval[[]historyRow](p.t, p.panelEnv, `[...document.querySelectorAll('#timeline li')].map(li => ({
		Type: li.dataset.type, Time: li.querySelector('time').getAttribute('datetime')}))`)
	var got, exp []string
	for _, r := range rows {
		got = append(got, r.Type+" "+r.Time)
	}
	for _, e := range evs {
		typ := map[string]string{"text_delta": "text"}[e.Type]
		exp = append(exp, cmpOr(typ, e.Type)+" "+e.Time.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z"))
	}
	if !slices.Equal(got, exp) {
		p.t.Errorf("history %s, one row per stored event at its stored time:\ngot  %q\nwant %q", when, got, exp)
	}
	type scroll struct{ Top, Height, Client float64 }
	s := eval[scroll](p.t, p.panelEnv, `(() => { const ol = document.getElementById('timeline');
		return {Top: ol.scrollTop, Height: ol.scrollHeight, Client: ol.clientHeight}; })()`)
	if s.Height <= s.Client {
		p.t.Fatalf("history %s is %.0f px in a %.0f px box: too short to tell where it is scrolled", when, s.Height, s.Client)
	}
	if off := s.Height - s.Top - s.Client; off > 2 {
		p.t.Errorf("history %s is scrolled %.0f px above its newest row (top %.0f of %.0f in %.0f)", when, off, s.Top, s.Height, s.Client)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// outcome is what the finished session shows.
type outcome struct {
	Shown              bool
	Status, Title      string
	Words, Report      string
	Pill, ListStatus   string
	ReportCode         int
	ReportHasSummary   bool
	ReportTitleMatches bool
}

// checkFinished checks that session id shows how it came out, with the
// model's last words and a link to its report that opens.
func (p *livePanel) checkFinished(id, words, when string) {
	p.t.Helper()
	p.do(p.t, "wait for the outcome "+when, 60*time.Second, chromedp.Poll[chromedp.Void](
		`!document.getElementById('outcome').hidden`))
	ctx, cancel := context.WithTimeout(p.tab, 30*time.Second)
	defer cancel()
	o, err := chromedp.Run(ctx, chromedp.Evaluate[outcome](fmt.Sprintf(`(async () => {
		const a = document.getElementById('outcome-report');
		const r = await fetch(a.href, {credentials: 'same-origin'});
		const html = await r.text();
		const li = document.querySelector('#session-list a[data-session=%q]');
		return {Shown: !document.getElementById('outcome').hidden, Status: document.getElementById('outcome').dataset.status,
			Title: document.getElementById('outcome-title').textContent, Words: document.getElementById('outcome-words').textContent,
			Report: a.getAttribute('href'), Pill: document.getElementById('session-status').textContent,
			ListStatus: li ? li.dataset.status : '', ReportCode: r.status,
			ReportHasSummary: html.includes('class="badge ok">Completed<'),
			ReportTitleMatches: html.includes(%q)};
	})()`, id, "Buy the teapot"), chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("read the outcome %s: %v\n%s", when, err, p.diagnose(p.t))
	}
	want := outcome{Shown: true, Status: "completed", Title: "Completed", Words: words, Report: p.url + "/session/" + id + "/report/t1",
		Pill: "completed", ListStatus: "completed", ReportCode: 200, ReportHasSummary: true, ReportTitleMatches: true}
	if o != want {
		p.t.Errorf("finished session %s shows %+v, want %+v", when, o, want)
	}
}

// TestPanelLiveHistory runs a long session to an approval, reloads the
// panel there (also at a phone's width, where the decision comes first and
// the taken-over screen is not squeezed), approves, checks the finished
// session and its report, restarts the server and checks it all again;
// the live view follows the page; no screen logs an error.
func TestPanelLiveHistory(t *testing.T) {
	const steps = 12
	var replies []anthropictest.Reply
	for i := range steps {
		click := actions.Action{Kind: actions.Click, At: actions.Pt(float64(60+40*i), 650), HasAt: true}
		replies = append(replies, anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.Text(fmt.Sprintf("Step %d: I look around the shop first.", i+1)),
			anthropictest.Action(t, fmt.Sprintf("toolu_look%d", i), anthropic.Computer20250124, click),
		}})
	}
	const last = "The teapot is bought."
	replies = append(replies,
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Buying the teapot."),
			anthropictest.Action(t, "toolu_buy", anthropic.Computer20250124, buyClick())}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text(last)}})
	p := startLivePanel(t, replies...)
	p.do(t, "a desktop's width", 30*time.Second, chromedp.EmulateViewport(deskWidth, 1000))

	p.screen("login")
	p.do(t, "open the panel logged out", 30*time.Second, chromedp.Navigate(p.url+"/"), chromedp.WaitVisible("#login-token"))
	p.screen("logged-out")
	p.login(t)
	p.screen("home")
	p.do(t, "open the new task form", 30*time.Second, chromedp.Click("#new-task-link"), chromedp.WaitVisible("#nt-task"))
	p.screen("new-task")

	// A session that waits for the decision on Buy, after many steps.
	id := p.createSession(t, "Buy the teapot")
	p.do(t, "open the session", 30*time.Second, chromedp.Navigate(p.url+"/#/session/"+id), chromedp.WaitVisible("#session-view"))
	p.waitMarker(t)
	p.screen("waiting")
	p.checkLive()
	p.do(t, "reload", 60*time.Second, chromedp.Reload(), chromedp.WaitVisible("#session-view"))
	p.waitMarker(t)
	p.screen("waiting-reloaded")
	p.checkHistory(id, "reloaded while waiting")
	p.checkPhone()
	p.screen("phone")

	frames := eval[int](t, p.panelEnv, `Number(document.getElementById('live-img').dataset.frames)`)
	p.do(t, "approve", 30*time.Second, chromedp.Click(`#approval-list .approval .approve`))
	p.waitEnd(t)
	// The click on Buy changed the page: the live view showed it.
	p.do(t, "see the live view move on", 30*time.Second, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`Number(document.getElementById('live-img').dataset.frames) > %d`, frames)))
	p.checkFinished(id, last, "at the end")
	p.checkHistory(id, "at the end")
	p.screen("finished")
	p.do(t, "reload the finished session", 60*time.Second, chromedp.Reload(), chromedp.WaitVisible("#session-view"))
	p.checkFinished(id, last, "reloaded at the end")
	p.checkHistory(id, "reloaded at the end")
	p.screen("finished-reloaded")

	// The panel leaves while the server restarts (a page open then would
	// rightly log the failed requests), and comes back to it.
	p.do(t, "leave the panel", 30*time.Second, chromedp.Navigate("about:blank"))
	p.stop()
	p.start()
	p.do(t, "open the panel after the restart", 60*time.Second, chromedp.Navigate(p.url+"/#/session/"+id), chromedp.WaitVisible("#session-view"))
	p.checkFinished(id, last, "after a restart")
	p.checkHistory(id, "after a restart")
	p.screen("restarted")

	report := eval[string](t, p.panelEnv, `document.getElementById('outcome-report').href`)
	p.do(t, "open the report", 30*time.Second, chromedp.Navigate(report),
		chromedp.Poll[chromedp.Void](`document.body.classList.contains('viewer')`))
	if n := eval[int](t, p.panelEnv, `document.querySelectorAll('section.step').length`); n != steps+2 {
		t.Errorf("the report shows %d steps, want %d", n, steps+2)
	}
	p.screen("report")
	p.screen("done")
}

// checkLive checks that the live view shows frames of the session's
// screen, of its screenshots' shape, and knows their size.
func (p *livePanel) checkLive() {
	p.t.Helper()
	p.do(p.t, "wait for the live view", 60*time.Second, chromedp.Poll[chromedp.Void](`(() => {
		const i = document.getElementById('live-img');
		return Number(i.dataset.frames) > 0 && i.complete && i.naturalWidth > 0 && !i.hidden;
	})()`))
	type view struct{ W, H, ImageW, ImageH int }
	v := eval[view](p.t, p.panelEnv, `(() => { const i = document.getElementById('live-img');
		return {W: i.naturalWidth, H: i.naturalHeight, ImageW: Number(i.dataset.imageW), ImageH: Number(i.dataset.imageH)}; })()`)
	if v.ImageW != shopViewport.W || v.ImageH != shopViewport.H || v.W*shopViewport.H != v.H*shopViewport.W || v.W > shopViewport.W {
		p.t.Errorf("live view is %dx%d of %dx%d screenshots, want a frame of their shape, no larger, of %v", v.W, v.H, v.ImageW, v.ImageH, shopViewport)
	}
}

// checkPhone checks the session at 390 px: the decision comes before the
// list of sessions, and the screen an operator takes over is wider than
// the page, to be scrolled across; then it hands back.
func (p *livePanel) checkPhone() {
	p.t.Helper()
	p.do(p.t, "a phone's width", 30*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	type layout struct{ Card, List, Shot, Page float64 }
	l := eval[layout](p.t, p.panelEnv, `(() => {
		const top = (e) => e.getBoundingClientRect().top + scrollY;
		return {Card: top(document.querySelector('#approval-list .approval')), List: top(document.getElementById('session-list')),
			Page: document.documentElement.clientWidth};
	})()`)
	if l.Card >= l.List {
		p.t.Errorf("at 390 px the decision is at %.0f px, below the list of sessions at %.0f px", l.Card, l.List)
	}
	p.snap(p.t, "live-phone-decision")
	p.do(p.t, "take over at a phone's width", 30*time.Second, chromedp.Click("#takeover"), chromedp.WaitVisible("#handback"))
	shot := eval[float64](p.t, p.panelEnv, `document.getElementById('live-img').getBoundingClientRect().width`)
	if shot < 2*l.Page*0.9 {
		p.t.Errorf("at %.0f px the taken-over screen is %.0f px wide, want about twice the page to aim at", l.Page, shot)
	}
	p.snap(p.t, "live-phone-takeover")
	p.do(p.t, "hand back", 30*time.Second, chromedp.Click("#handback"), chromedp.WaitVisible("#takeover"),
		chromedp.EmulateViewport(deskWidth, 1000))
}

// deskWidth is the width of the operator's window on a desktop, in CSS px;
// checkPhone shows the panel at 390.
const deskWidth = 1400
