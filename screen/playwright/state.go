package playwright

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	pw "github.com/playwright-community/playwright-go"
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
	netGen   int64 // request starts and ends seen
	gone     string
	events   []string
}

// request is a network request in flight.
type request struct {
	url   string
	start time.Time
}

func newPageState() *pageState {
	return &pageState{changed: make(chan struct{}, 1), requests: map[pw.Request]request{}}
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
	p.OnClose(func(pw.Page) { s.setGone("the tab was closed") })
	p.OnCrash(func(pw.Page) {
		s.setGone("the page crashed")
		s.note("the page crashed")
	})
	// Playwright dismisses dialogs by itself only when nobody listens; this
	// handler runs on a goroutine of Playwright's, so it may answer.
	p.OnDialog(func(dl pw.Dialog) {
		if dl.Type() == "beforeunload" {
			s.note("the page asked to confirm leaving it; it was allowed to")
			_ = dl.Accept()
			return
		}
		s.note("a %s dialog said %q; it was dismissed", dl.Type(), clip(dl.Message(), 200))
		_ = dl.Dismiss()
	})
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
