package cdp

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"

	"github.com/spotter-harness/spotter/screen"
)

// pageLog gathers what the display's pages log to their console and the
// requests they send, from the protocol events chromedp already receives
// (it enables the Runtime, Log and Network domains on every tab), for the
// next capture's screen.PageLog. It is a listener of every tab of the
// display, beside the tab's pageState: it sends no command and does
// little per event, so it costs a step nothing it would notice; Capture
// only takes what it holds (screen.PageLogger keeps it bounded).
type pageLog struct {
	screen.PageLogger
}

// onEvent records one protocol event of a tab. It runs on chromedp's event
// loop.
func (l *pageLog) onEvent(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		l.Console(consoleMessage(ev))
	case *runtime.EventExceptionThrown:
		l.Console(exceptionMessage(ev))
	case *log.EventEntryAdded:
		if m, ok := logMessage(ev); ok {
			l.Console(m)
		}
	case *network.EventRequestWillBeSent:
		l.sent(ev)
	case *network.EventResponseReceived:
		if ev.Response != nil {
			l.Answered(ev.RequestID, int(ev.Response.Status))
		}
	case *network.EventLoadingFinished:
		l.Done(ev.RequestID, monotonic(float64(ev.Timestamp)), "")
	case *network.EventLoadingFailed:
		why := ev.ErrorText
		switch {
		case ev.BlockedReason != "":
			why = "blocked: " + string(ev.BlockedReason)
		case ev.Canceled:
			why = "canceled"
		}
		l.Done(ev.RequestID, monotonic(float64(ev.Timestamp)), why)
	}
}

// take returns what was gathered since the last take.
func (l *pageLog) take() screen.PageLog { return l.Take() }

// sent records a request, or a redirect of one: the redirect's response
// ends the request it answers, and the new URL is a request of its own.
func (l *pageLog) sent(ev *network.EventRequestWillBeSent) {
	if ev.Request == nil {
		return
	}
	at := monotonic(float64(ev.Timestamp))
	if ev.RedirectResponse != nil {
		l.Answered(ev.RequestID, int(ev.RedirectResponse.Status))
		l.Done(ev.RequestID, at, "")
	}
	l.Sent(ev.RequestID, screen.Request{
		Time:   wallTime(float64(ev.WallTime)),
		Method: ev.Request.Method,
		URL:    ev.Request.URL + ev.Request.URLFragment,
		Type:   strings.ToLower(string(ev.Type)),
	}, at)
}

// monotonic is a protocol monotonic time (seconds since some point) as a
// time.Time, for durations.
func monotonic(s float64) time.Time {
	return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second)))
}

// consoleMessage is a console call as the console shows it: its
// arguments, separated by spaces, strings as they are and other values as
// the browser describes them.
func consoleMessage(ev *runtime.EventConsoleAPICalled) screen.ConsoleMessage {
	parts := make([]string, 0, len(ev.Args))
	for _, a := range ev.Args {
		parts = append(parts, remoteText(a))
	}
	m := screen.ConsoleMessage{Time: epochMillis(float64(ev.Timestamp)), Level: consoleLevel(ev.Type), Source: "console",
		Text: strings.Join(parts, " ")}
	if st := ev.StackTrace; st != nil && len(st.CallFrames) > 0 {
		f := st.CallFrames[0]
		m.Where = where(f.URL, f.LineNumber)
	}
	return m
}

// consoleLevel maps a console call to the levels of a PageLog.
func consoleLevel(t runtime.ConsoleAPICalledType) string {
	switch t {
	case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeAssert:
		return "error"
	case runtime.ConsoleAPICalledTypeWarning:
		return "warning"
	case runtime.ConsoleAPICalledTypeInfo:
		return "info"
	case runtime.ConsoleAPICalledTypeDebug:
		return "debug"
	}
	return "log"
}

// exceptionMessage is an uncaught exception: its message and the
// exception's own description (which holds its stack).
func exceptionMessage(ev *runtime.EventExceptionThrown) screen.ConsoleMessage {
	m := screen.ConsoleMessage{Time: epochMillis(float64(ev.Timestamp)), Level: "error", Source: "exception"}
	d := ev.ExceptionDetails
	if d == nil {
		m.Text = "uncaught exception"
		return m
	}
	m.Text = d.Text
	if d.Exception != nil {
		if desc := remoteText(d.Exception); desc != "" {
			m.Text = strings.TrimSpace(strings.TrimSuffix(d.Text, ":")) + " " + desc
		}
	}
	m.Where = where(d.URL, d.LineNumber)
	return m
}

// logMessage is one of the browser's own messages about the page. Console
// calls and exceptions come as Runtime events (consoleMessage,
// exceptionMessage), so any copy of them the Log domain sends (source
// javascript) is left out, and so are verbose messages.
func logMessage(ev *log.EventEntryAdded) (screen.ConsoleMessage, bool) {
	e := ev.Entry
	if e == nil || e.Source == log.EntrySourceJavascript || e.Level == log.EntryLevelVerbose {
		return screen.ConsoleMessage{}, false
	}
	level := string(e.Level)
	if e.Level == log.EntryLevelWarning {
		level = "warning"
	}
	return screen.ConsoleMessage{Time: epochMillis(float64(e.Timestamp)), Level: level, Source: string(e.Source),
		Text: e.Text, Where: where(e.URL, e.LineNumber)}, true
}

// remoteText shows a value as the console would: a string as it is, a
// number or boolean in JSON, anything else by the browser's description.
func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if len(o.Value) > 0 {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
		return string(o.Value)
	}
	if o.UnserializableValue != "" {
		return string(o.UnserializableValue)
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Type)
}

// where names a script location, its line counted from 1.
func where(url string, line int64) string {
	if url == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", clipText(url, screen.MaxURLText), line+1)
}

// epochMillis is a protocol time in milliseconds since the epoch.
func epochMillis(ms float64) time.Time {
	if ms <= 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
		return time.Now()
	}
	return time.UnixMilli(int64(ms)).Add(time.Duration(math.Mod(ms, 1) * float64(time.Millisecond)))
}

// wallTime is a protocol time in seconds since the epoch.
func wallTime(s float64) time.Time { return epochMillis(s * 1000) }
