package playwright

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/screen"
)

// pageState is what a display learns from the page's events. Playwright
// calls the handlers on its own goroutines; they only record. All fields
// are guarded by mu.
type pageState struct {
	mu sync.Mutex
	// changed receives a value (without blocking the sender) whenever a
	// request starts or ends.
	changed  chan struct{}
	requests map[pw.Request]request
	netGen   int64  // request starts and ends seen
	gone     string // the page crashed
	closed   bool   // the page was closed
	events   []string
	// dismiss makes the display dismiss dialogs as they open
	// (Config.DismissDialogs); it is set before watch.
	dismiss bool
	// dialog is the JavaScript dialog that blocks the page, if any, and
	// info what it says; dialogSeen counts dialogs that opened, so that a
	// Perform can tell whether it opened one.
	dialog     pw.Dialog
	info       screen.Dialog
	dialogSeen int
	// blocked is closed while a dialog is open, and replaced when it is
	// answered.
	blocked chan struct{}
	// chooser is the file chooser the page opened and no upload answered.
	chooser pw.FileChooser
}

// request is a network request in flight.
type request struct {
	url   string
	start time.Time
}

func newPageState(dismissDialogs bool) *pageState {
	return &pageState{changed: make(chan struct{}, 1), requests: map[pw.Request]request{}, blocked: make(chan struct{}),
		dismiss: dismissDialogs}
}

// watch subscribes s to p's events.
func (s *pageState) watch(p pw.Page) {
	p.OnRequest(func(r pw.Request) {
		switch r.ResourceType() {
		case "eventsource", "websocket":
			return // long-lived: never waited for
		}
		if strings.HasPrefix(r.URL(), "data:") {
			return
		}
		s.mu.Lock()
		s.requests[r] = request{url: r.URL(), start: time.Now()}
		s.netGen++
		s.mu.Unlock()
		s.poke()
	})
	p.OnRequestFinished(s.finish)
	p.OnRequestFailed(s.finish)
	p.OnClose(func(pw.Page) {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.poke()
	})
	p.OnCrash(func(pw.Page) {
		s.setGone("the page crashed")
		s.note("the page crashed")
	})
	// Playwright dismisses dialogs by itself only when nobody listens. A
	// dialog left open blocks the page (every Playwright call on it waits)
	// until the dialog action answers it.
	p.OnDialog(s.opened)
	p.OnDownload(func(dl pw.Download) {
		s.note("A download of %s (%s) was refused: this display keeps no downloads.", clip(dl.SuggestedFilename(), 120), clip(dl.URL(), 200))
	})
	// With a listener, Playwright intercepts file choosers: no native
	// one opens, and the Upload action answers it.
	p.OnFileChooser(func(fc pw.FileChooser) {
		s.mu.Lock()
		s.chooser = fc
		s.mu.Unlock()
		s.note("%s", screen.ChooserNote(fc.IsMultiple()))
	})
}

// fileChooser returns the open file chooser, or nil.
func (s *pageState) fileChooser() pw.FileChooser {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chooser
}

// clearChooser forgets fc once it is answered.
func (s *pageState) clearChooser(fc pw.FileChooser) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chooser == fc {
		s.chooser = nil
	}
}

// opened records a dialog that opened, or dismisses it if s is set to.
// It runs on a goroutine of Playwright's.
func (s *pageState) opened(dl pw.Dialog) {
	info := screen.Dialog{Type: dl.Type(), Message: clip(dl.Message(), 500), DefaultPrompt: clip(dl.DefaultValue(), 500)}
	if pg := dl.Page(); pg != nil {
		info.URL = pg.URL()
	}
	if s.dismiss {
		if err := dl.Dismiss(); err != nil {
			s.note("%s opened and could not be dismissed: %s", info.String(), playwrightText(err))
			return
		}
		s.note("%s opened and was dismissed automatically.", info.String())
		return
	}
	s.mu.Lock()
	s.dialog, s.info = dl, info
	s.dialogSeen++
	close(s.blocked)
	s.mu.Unlock()
	s.poke()
}

// currentDialog returns the open JavaScript dialog, if any, what it says,
// and how many dialogs have opened so far.
func (s *pageState) currentDialog() (pw.Dialog, screen.Dialog, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dialog, s.info, s.dialogSeen
}

// dialogOpened returns a channel that is closed while a JavaScript dialog
// is open.
func (s *pageState) dialogOpened() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocked
}

// answered records that dl was answered.
func (s *pageState) answered(dl pw.Dialog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dialog != dl {
		return
	}
	s.dialog, s.info = nil, screen.Dialog{}
	s.blocked = make(chan struct{})
}

func (s *pageState) finish(r pw.Request) {
	s.mu.Lock()
	_, ok := s.requests[r]
	if ok {
		delete(s.requests, r)
		s.netGen++
	}
	s.mu.Unlock()
	if ok {
		s.poke()
	}
}

func (s *pageState) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// maxTracked is how long a request that never finishes is remembered.
const maxTracked = 10 * time.Minute

// network returns the requests in flight that started after since, oldest
// first, and the count of request starts and ends so far.
func (s *pageState) network(since time.Time) ([]request, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pending []request
	now := time.Now()
	for k, r := range s.requests {
		switch {
		case now.Sub(r.start) > maxTracked:
			delete(s.requests, k)
		case r.start.After(since):
			pending = append(pending, r)
		}
	}
	slices.SortFunc(pending, func(a, b request) int { return a.start.Compare(b.start) })
	return pending, s.netGen
}

// pendingReason describes requests in flight, oldest first.
func pendingReason(rs []request) string {
	const show = 3
	urls := make([]string, 0, show)
	for i, r := range rs {
		if i == show {
			urls = append(urls, "…")
			break
		}
		urls = append(urls, clip(r.url, 120))
	}
	noun := "requests"
	if len(rs) == 1 {
		noun = "request"
	}
	return fmt.Sprintf("%d network %s still pending: %s", len(rs), noun, strings.Join(urls, ", "))
}

func (s *pageState) setGone(cause string) {
	s.mu.Lock()
	if s.gone == "" {
		s.gone = cause
	}
	s.mu.Unlock()
	s.poke()
}

// isClosed reports whether the page was closed.
func (s *pageState) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// goneCause says why the page can no longer work, or "" if it can.
func (s *pageState) goneCause() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone
}

// note records something to tell the model with the next capture.
func (s *pageState) note(format string, args ...any) {
	s.mu.Lock()
	s.events = append(s.events, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// takeEvents returns the notes recorded since the last call.
func (s *pageState) takeEvents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events
	s.events = nil
	return e
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
