package screen

import (
	"sync"
	"time"
	"unicode/utf8"
)

// PageLog is what a page did between two captures, for a person reading a
// run: the messages of its console and the requests it sent. A display with
// a browser fills it in from the browser's own events, as they come, so the
// capture only hands over what was gathered; a display without a page
// leaves it empty. It is bounded: a display keeps the latest MaxConsole
// messages and MaxRequests requests between two captures, and counts the
// older ones it let go in DroppedConsole and DroppedRequests.
//
// A PageLog is never shown to a model. What it holds may be secret (a
// page can log what was typed, or send it in a URL): whoever records it
// redacts it first, as it does every other text of a run.
type PageLog struct {
	Console         []ConsoleMessage `json:"console,omitempty"`
	Requests        []Request        `json:"requests,omitempty"`
	DroppedConsole  int              `json:"dropped_console,omitzero"`
	DroppedRequests int              `json:"dropped_requests,omitzero"`
}

// Bounds of a PageLog, and of its texts: a longer message or URL is cut,
// with an ellipsis.
const (
	MaxConsole     = 200
	MaxRequests    = 300
	MaxConsoleText = 2000 // characters of a message
	MaxURLText     = 2000 // characters of a URL
)

// Empty reports whether l holds nothing.
func (l PageLog) Empty() bool {
	return len(l.Console) == 0 && len(l.Requests) == 0 && l.DroppedConsole == 0 && l.DroppedRequests == 0
}

// ConsoleMessage is one message of a page's console: a console call, an
// uncaught exception, or one of the browser's own messages about the page
// (a resource that failed to load, a blocked request).
type ConsoleMessage struct {
	Time time.Time `json:"time"`
	// Level is "error", "warning", "info", "log" or "debug".
	Level string `json:"level"`
	// Source says where it came from: "console" (a console call),
	// "exception" (uncaught), or the browser's own source ("network",
	// "security", "violation", ...).
	Source string `json:"source,omitempty"`
	Text   string `json:"text"`
	// Where is the script location that logged it, "URL:line", when known.
	Where string `json:"where,omitempty"`
}

// Request is one network request of a page.
type Request struct {
	Time   time.Time `json:"time"` // when the page sent it
	Method string    `json:"method"`
	URL    string    `json:"url"`
	// Type is what the page loaded: "document", "script", "stylesheet",
	// "image", "fetch", "xhr", ... as the browser names it, in lower case.
	Type string `json:"type,omitempty"`
	// Status is the response's HTTP status; 0 when none came.
	Status int `json:"status,omitzero"`
	// Error says why it failed ("net::ERR_CONNECTION_REFUSED", "canceled"),
	// if it did.
	Error string `json:"error,omitempty"`
	// Duration runs from sending to the last byte, or to the failure.
	Duration time.Duration `json:"duration,omitzero"`
	// Pending marks a request still going at the capture (a stream, a long
	// poll, or one that had not answered yet).
	Pending bool `json:"pending,omitzero"`
}

// A PageLogger gathers a PageLog from a browser's events, within its
// bounds: a display feeds it from its event handlers, which must not wait,
// and takes what it gathered at each capture. Requests are followed by a
// key of the display's choosing, from Sent to Done. Its methods are safe
// for concurrent use; the zero value is ready.
type PageLogger struct {
	mu   sync.Mutex
	log  PageLog
	open map[any]openRequest // requests still going, by key
}

type openRequest struct {
	i     int // in log.Requests
	start time.Time
}

// Console records a console message, its text cut to MaxConsoleText.
func (l *PageLogger) Console(m ConsoleMessage) {
	m.Text = clipText(m.Text, MaxConsoleText)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.log.Console) == MaxConsole {
		l.log.Console = append(l.log.Console[:0], l.log.Console[1:]...)
		l.log.DroppedConsole++
	}
	l.log.Console = append(l.log.Console, m)
}

// Sent records a request the page sent at start (by the clock its
// duration will be measured with), followed as key.
func (l *PageLogger) Sent(key any, r Request, start time.Time) {
	r.URL = clipText(r.URL, MaxURLText)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.log.Requests) == MaxRequests {
		l.log.Requests = append(l.log.Requests[:0], l.log.Requests[1:]...)
		l.log.DroppedRequests++
		for k, o := range l.open {
			if o.i == 0 {
				delete(l.open, k)
				continue
			}
			o.i--
			l.open[k] = o
		}
	}
	if l.open == nil {
		l.open = map[any]openRequest{}
	}
	l.open[key] = openRequest{i: len(l.log.Requests), start: start}
	l.log.Requests = append(l.log.Requests, r)
}

// Answered records the status of the response to the request key.
func (l *PageLogger) Answered(key any, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o, ok := l.open[key]; ok {
		l.log.Requests[o.i].Status = status
	}
}

// Done ends the request key at end, which failed if why says why.
func (l *PageLogger) Done(key any, end time.Time, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.open[key]
	if !ok {
		return
	}
	delete(l.open, key)
	r := &l.log.Requests[o.i]
	r.Error = why
	if end.After(o.start) {
		r.Duration = end.Sub(o.start).Round(time.Microsecond)
	}
}

// Take returns what was gathered since the last Take, and forgets it.
// Requests still going are marked pending and followed no further.
func (l *PageLogger) Take() PageLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.log
	for _, o := range l.open {
		out.Requests[o.i].Pending = true
	}
	l.log = PageLog{}
	clear(l.open)
	return out
}

// clipText cuts s to at most n characters, with an ellipsis.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
