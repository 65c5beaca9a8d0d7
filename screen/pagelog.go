package screen

import "time"

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
