package vnc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// TestConformanceThroughChromium runs the conformance suite's checks of
// input and pictures on a desktop, where a VNC display cannot load pages
// itself: Chromium in kiosk mode fills the screen and shows the suite's
// pages, and every click, key, text and wheel turn goes to it through VNC.
// Only the loading of a page is not VNC's: pageProxy tells the page shown
// where to go next, and reports the page's scroll offset.
//
// It declares what conformanceCaps declares, with Pages and without
// Typing: the suite's Typing check wants text that no US key types (é, 日本)
// to arrive as text alone, without key events, as a browser's own input
// method delivers it. RFB has key events only, so on an X desktop every
// character arrives as a key press of a keysym that Xvnc maps to a spare
// key code on the fly; Chromium reports keydown events for them (with an
// empty key, as its keymap lags behind Xvnc's mapping) and, now and then,
// drops the first character of a newly mapped keysym. browserDesktop
// refuses such text with screen.ErrUnsupported, as the suite requires of an
// undeclared capability; TestInput's typing checks that X applications
// receive it, character by character.
func TestConformanceThroughChromium(t *testing.T) {
	integration(t)
	screentest.Run(t, conformanceCaps&^screentest.Typing|screentest.Pages, func(t *testing.T, o screentest.Options) screentest.Display {
		p := startPageProxy(t, o.Pages)
		d := startDesktop(t, desktop.Config{Size: o.Viewport, Apps: []desktop.App{kiosk(p.url + "/__blank")}})
		v := dial(t, d, vnc.Config{})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := p.waitPage(ctx, "/__blank"); err != nil {
			t.Fatalf("Chromium did not show its first page: %v", err)
		}
		return &browserDesktop{Display: v, p: p}
	})
}

// kiosk is Chromium filling the screen with url, without scrollbars or
// prompts of its own, and without smooth scrolling: the suite reads a
// scroll's distance from the scroll events the page reports, which a
// smooth scroll sends over the whole of its animation, and a frame of the
// animation may come later than the proxy's quiet period (the display's
// own settling waits for the animation's frames, see the package
// documentation, but the events are posted after them).
func kiosk(url string) desktop.App {
	app := desktop.Chromium(url)
	app.Argv = append(app.Argv[:len(app.Argv)-1], "--kiosk", "--hide-scrollbars", "--disable-smooth-scrolling",
		"--disable-pinch", "--overscroll-history-navigation=0", url)
	return app
}

// browserDesktop is a VNC display of a desktop that shows Chromium: Perform
// loads a page through the proxy and performs everything else through VNC
// (but text that no US key types, see TestConformanceThroughChromium), and
// Capture returns once the page's requests are done, with the page's URL
// and scroll offset in its Frame.
type browserDesktop struct {
	*vnc.Display
	p *pageProxy

	mu  sync.Mutex
	url string // the page loaded, as the suite named it
}

func (b *browserDesktop) Perform(ctx context.Context, m screen.Mapped) error {
	if m.Kind == actions.Type {
		for _, r := range m.Text {
			if _, ok := actions.KeyForRune(r); !ok && r != '\n' {
				return fmt.Errorf("type %q: Chromium on an X desktop gets %q as a key press: %w", m.Text, r, screen.ErrUnsupported)
			}
		}
	}
	if m.Kind != actions.Navigate {
		return b.Display.Perform(ctx, m)
	}
	updates, _ := vnc.Damage(b.Display)
	if err := b.p.navigate(ctx, m.URL); err != nil {
		return fmt.Errorf("navigate to %s: %w", m.URL, err)
	}
	// The page drew its first frames; wait until the desktop shows
	// them, which a loaded machine may do late. A page that looks like
	// the one before it changes no pixel, hence the bound.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if n, _ := vnc.Damage(b.Display); n > updates {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the display's updates, with the deadline above
	}
	b.mu.Lock()
	b.url = m.URL
	b.mu.Unlock()
	return nil
}

// Capture waits for the screen to settle after the latest input (the
// display's own settling), then for the page's requests to end, and then
// captures again: a page still busy after the first capture (a smooth
// scroll's animation reports scroll events while it runs) has finished
// then, and the second capture shows its end, cheaply if nothing changed.
func (b *browserDesktop) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	if _, err := b.Display.Capture(ctx, o); err != nil {
		return screen.Shot{}, err
	}
	quiet := b.p.quiet(ctx)
	shot, err := b.Display.Capture(ctx, o)
	if err != nil {
		return shot, err
	}
	if quiet != nil {
		shot.Frame.Settle.TimedOut = true
		shot.Frame.Settle.Reason = quiet.Error()
	}
	b.mu.Lock()
	shot.Frame.URL = b.url
	b.mu.Unlock()
	shot.Frame.Scroll = b.p.scrolled(shot.Frame.URL)
	return shot, nil
}

// A pageProxy serves the suite's pages to Chromium, with a script added to
// each that asks the proxy, in a long poll, where to go next. It counts
// the pages' other requests, so that Capture can wait for them.
type pageProxy struct {
	url    string // the proxy's own base URL
	target string // the suite's

	next chan string // URLs to load, for the page's long poll

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change below
	inflight int           // requests the pages made, less the long polls
	last     time.Time     // when the latest of those ended
	pages    []string      // paths whose long poll has begun, in order
	loads    map[string]bool
	painted  map[string]bool       // by session: the page drew frames after its load event
	scrolls  map[string]pageScroll // by session: the latest scroll offset a page reported
}

// pageScroll is the scroll offset of a page, from the event it reported
// last.
type pageScroll struct {
	seq  int
	x, y float64
}

// pollScript asks the proxy where to go next, again and again, and tells
// it when the page has drawn its first frames after its load event.
const pollScript = `<script>
window.addEventListener("load", () => requestAnimationFrame(() => requestAnimationFrame(() =>
  fetch("/__painted?s=" + encodeURIComponent(new URLSearchParams(location.search).get("s") || "")))));
(async () => {
  for (;;) {
    try {
      const r = await fetch("/__next?at=" + encodeURIComponent(location.pathname));
      if (r.status === 200) { location.href = await r.text(); return; }
    } catch (e) {}
  }
})();
</script>`

func startPageProxy(t *testing.T, target string) *pageProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("the suite's pages at %q: %v", target, err)
	}
	p := &pageProxy{target: target, next: make(chan string, 1), changed: make(chan struct{}), loads: map[string]bool{}, painted: map[string]bool{}, scrolls: map[string]pageScroll{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		body = append(body, pollScript...)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /__blank", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><body style='margin:0;background:#fff'>"+pollScript)
	})
	mux.HandleFunc("GET /__next", p.poll)
	mux.HandleFunc("GET /__painted", func(w http.ResponseWriter, r *http.Request) {
		s := r.URL.Query().Get("s")
		p.update(func() { p.painted[s] = true })
	})
	mux.Handle("/", p.count(rp))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// update changes the proxy's state under its lock and wakes its waiters.
func (p *pageProxy) update(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
	close(p.changed)
	p.changed = make(chan struct{})
}

// count wraps h, the pages' own requests, to count them; it notes the
// load events the pages report.
func (p *pageProxy) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.update(func() { p.inflight++ })
		defer p.update(func() { p.inflight--; p.last = time.Now() })
		if r.Method == http.MethodPost && r.URL.Path == "/events" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			s := r.URL.Query().Get("s")
			var ev struct {
				Type             string
				Seq              int
				ScrollX, ScrollY float64
			}
			if err := json.Unmarshal(body, &ev); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			p.update(func() {
				if ev.Type == "load" {
					p.loads[s] = true
				}
				if old, ok := p.scrolls[s]; !ok || ev.Seq > old.seq {
					p.scrolls[s] = pageScroll{ev.Seq, ev.ScrollX, ev.ScrollY}
				}
			})
		}
		h.ServeHTTP(w, r)
	})
}

// poll is the pages' long poll: it answers with the next URL to load.
func (p *pageProxy) poll(w http.ResponseWriter, r *http.Request) {
	at := r.URL.Query().Get("at")
	p.update(func() { p.pages = append(p.pages, at) })
	select {
	case u := <-p.next:
		fmt.Fprint(w, u)
	case <-r.Context().Done():
	}
}

// wait waits until cond, called under the proxy's lock, holds.
func (p *pageProxy) wait(ctx context.Context, cond func() bool) error {
	for {
		p.mu.Lock()
		ok, changed := cond(), p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// waitPage waits until a page at path polls for the next URL.
func (p *pageProxy) waitPage(ctx context.Context, path string) error {
	return p.wait(ctx, func() bool {
		for _, at := range p.pages {
			if at == path {
				return true
			}
		}
		return false
	})
}

// navigate has the page shown load u, a URL of the suite's pages, through
// the proxy, and returns once the new page reported its load event.
func (p *pageProxy) navigate(ctx context.Context, u string) error {
	rest, ok := strings.CutPrefix(u, p.target)
	if !ok {
		return fmt.Errorf("%w: only the suite's pages (%s) load here", screen.ErrUnsupported, p.target)
	}
	q, err := url.Parse(rest)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	select {
	case p.next <- p.url + rest:
	case <-ctx.Done():
		return fmt.Errorf("the page shown asked for no next page: %w", context.Cause(ctx))
	}
	s := q.Query().Get("s")
	if err := p.wait(ctx, func() bool { return p.loads[s] && p.painted[s] }); err != nil {
		return fmt.Errorf("no load event and frames from %s: %w", rest, err)
	}
	return nil
}

// scrolled returns the scroll offset that the page at u, a URL of the
// suite's pages, reported last.
func (p *pageProxy) scrolled(u string) actions.Point {
	q, err := url.Parse(u)
	if err != nil {
		return actions.Point{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.scrolls[q.Query().Get("s")]
	return actions.Pt(s.x, s.y)
}

// quietFor is how long the pages must have had no request open before a
// capture returns: their event reports follow input at once.
const quietFor = 150 * time.Millisecond

// quiet waits until the pages have had no request open for quietFor, and
// quietFor has passed since it was called (a loaded browser may send the
// reports of an input's events late), at most 5 seconds.
func (p *pageProxy) quiet(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	for {
		p.mu.Lock()
		busy, since := p.inflight > 0, time.Since(p.last)
		since = min(since, time.Since(start))
		changed := p.changed
		p.mu.Unlock()
		if !busy && since >= quietFor {
			return nil
		}
		var timer <-chan time.Time
		if !busy {
			timer = time.After(quietFor - since)
		}
		select {
		case <-changed:
		case <-timer:
		case <-ctx.Done():
			return fmt.Errorf("the pages' requests did not end: %w", context.Cause(ctx))
		}
	}
}
