package cdp

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// The page log keeps the latest messages and requests within its bounds,
// counts the ones it let go, and follows a request from its sending to
// its end, redirects included.
func TestPageLogBounds(t *testing.T) {
	var l pageLog
	for i := range screen.MaxConsole + 5 {
		l.onEvent(&runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeLog,
			Args: []*runtime.RemoteObject{{Type: "string", Value: []byte(fmt.Sprintf("%q", fmt.Sprint("m", i)))}}})
	}
	for i := range screen.MaxRequests + 3 {
		l.onEvent(&network.EventRequestWillBeSent{RequestID: network.RequestID(fmt.Sprint(i)), Timestamp: 1,
			Request: &network.Request{Method: "GET", URL: fmt.Sprint("https://a.example/", i)}})
	}
	// The newest request is answered; the oldest kept one never is.
	last := network.RequestID(fmt.Sprint(screen.MaxRequests + 2))
	l.onEvent(&network.EventResponseReceived{RequestID: last, Response: &network.Response{Status: 204}})
	l.onEvent(&network.EventLoadingFinished{RequestID: last, Timestamp: 1.25})
	got := l.take()
	if len(got.Console) != screen.MaxConsole || got.DroppedConsole != 5 || got.Console[0].Text != "m5" {
		t.Errorf("console: %d kept from %q, %d dropped; want %d from m5, 5 dropped",
			len(got.Console), got.Console[0].Text, got.DroppedConsole, screen.MaxConsole)
	}
	if len(got.Requests) != screen.MaxRequests || got.DroppedRequests != 3 {
		t.Fatalf("requests: %d kept, %d dropped; want %d, 3", len(got.Requests), got.DroppedRequests, screen.MaxRequests)
	}
	first, newest := got.Requests[0], got.Requests[len(got.Requests)-1]
	if first.URL != "https://a.example/3" || !first.Pending {
		t.Errorf("oldest kept request = %+v, want https://a.example/3, pending", first)
	}
	if newest.Status != 204 || newest.Pending || newest.Duration.Milliseconds() != 250 {
		t.Errorf("answered request = %+v, want status 204 after 250ms, not pending", newest)
	}
	if again := l.take(); !again.Empty() {
		t.Errorf("a second take = %+v, want nothing", again)
	}

	// A redirect ends the request it answers; the new URL goes on.
	l.onEvent(&network.EventRequestWillBeSent{RequestID: "r", Timestamp: 1, Request: &network.Request{Method: "GET", URL: "http://a.example/old"}})
	l.onEvent(&network.EventRequestWillBeSent{RequestID: "r", Timestamp: 1.1, Request: &network.Request{Method: "GET", URL: "https://a.example/new"},
		RedirectResponse: &network.Response{Status: 301}})
	l.onEvent(&network.EventLoadingFailed{RequestID: "r", Timestamp: 1.2, ErrorText: "net::ERR_CONNECTION_REFUSED"})
	got = l.take()
	want := []string{"http://a.example/old 301 ", "https://a.example/new 0 net::ERR_CONNECTION_REFUSED"}
	var have []string
	for _, r := range got.Requests {
		have = append(have, fmt.Sprintf("%s %d %s", r.URL, r.Status, r.Error))
	}
	if !slices.Equal(have, want) {
		t.Errorf("redirected request = %q, want %q", have, want)
	}
}

// A capture carries what the page logged and requested since the one
// before, and only that: its console calls, an uncaught exception and its
// requests with method, status and time. The browser's own message about
// a 404 may come after the response that ended the settle: the next
// capture has it then.
func TestCaptureCarriesPageLog(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "pagelog.html")
	do(t, d, kind(actions.Click, at(200, 130)))
	shot := capture(t, d, screen.CaptureOptions{Size: screen.Size{W: 640, H: 400}})
	// The page load's message belongs to the capture before.
	screentest.CheckConsole(t, shot.Log, []string{"warning console: clicked", "error console: something failed: badly",
		"error exception: Uncaught Error: boom"}, []string{"loaded"})
	next := capture(t, d, screen.CaptureOptions{Size: screen.Size{W: 640, H: 400}})
	both := screen.PageLog{Console: append(slices.Clone(shot.Log.Console), next.Log.Console...)}
	screentest.CheckConsole(t, both, []string{"error network: Failed to load resource: the server responded with a status of 404"}, nil)
	reqs := map[string]screen.Request{}
	for _, r := range shot.Log.Requests {
		reqs[r.URL[strings.LastIndex(r.URL, "/"):]] = r
	}
	slow, missing := reqs["/slow?ms=20"], reqs["/missing.json"]
	if slow.Method != "GET" || slow.Status != 200 || slow.Type != "fetch" || slow.Duration <= 0 || slow.Time.IsZero() {
		t.Errorf("request /slow = %+v, want a GET fetch answered 200 with its time", slow)
	}
	if missing.Status != 404 {
		t.Errorf("request /missing.json = %+v, want status 404 (requests: %+v)", missing, shot.Log.Requests)
	}
}

// BenchmarkPageLog is what the page log costs a step: per request (sent,
// answered, finished) and per console message, on chromedp's event loop,
// and the take at the capture.
func BenchmarkPageLog(b *testing.B) {
	msg := &runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeLog,
		Args: []*runtime.RemoteObject{{Type: "string", Value: []byte(`"a message of some length, as pages log them"`)}, {Type: "number", Value: []byte("42")}}}
	b.Run("request", func(b *testing.B) {
		var l pageLog
		for i := range b.N {
			id := network.RequestID(fmt.Sprint(i))
			l.onEvent(&network.EventRequestWillBeSent{RequestID: id, Timestamp: 1, WallTime: 1.7e9,
				Request: &network.Request{Method: "GET", URL: "https://shop.example/static/app.js?v=123"}, Type: network.ResourceTypeScript})
			l.onEvent(&network.EventResponseReceived{RequestID: id, Response: &network.Response{Status: 200}})
			l.onEvent(&network.EventLoadingFinished{RequestID: id, Timestamp: 1.02})
			if i%50 == 49 {
				l.take()
			}
		}
	})
	b.Run("console", func(b *testing.B) {
		var l pageLog
		for i := range b.N {
			l.onEvent(msg)
			if i%50 == 49 {
				l.take()
			}
		}
	})
}
