package playwright

import (
	"fmt"
	"strings"
	"time"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/screen"
)

// pageLog gathers what the display's pages log to their console and the
// requests they send, from the page events Playwright sends anyway, for
// the next capture's screen.PageLog (bounded by screen.PageLogger). The
// handlers only record: they make no Playwright call, so they cost a step
// nothing it would notice.
type pageLog struct {
	screen.PageLogger
}

// watch subscribes l to page's console, errors and requests.
func (l *pageLog) watch(page pw.Page) {
	page.OnConsole(func(m pw.ConsoleMessage) {
		c := screen.ConsoleMessage{Time: time.Now(), Level: consoleLevel(m.Type()), Source: "console", Text: m.Text()}
		if loc := m.Location(); loc != nil && loc.URL != "" {
			c.Where = fmt.Sprintf("%s:%d", loc.URL, loc.LineNumber+1)
		}
		l.Console(c)
	})
	page.OnPageError(func(err error) {
		l.Console(screen.ConsoleMessage{Time: time.Now(), Level: "error", Source: "exception", Text: "Uncaught " + err.Error()})
	})
	page.OnRequest(func(r pw.Request) {
		now := time.Now()
		l.Sent(r, screen.Request{Time: now, Method: r.Method(), URL: r.URL(), Type: r.ResourceType()}, now)
	})
	page.OnResponse(func(r pw.Response) { l.Answered(r.Request(), r.Status()) })
	page.OnRequestFinished(func(r pw.Request) { l.Done(r, time.Now(), "") })
	page.OnRequestFailed(func(r pw.Request) {
		why := "failed"
		if err := r.Failure(); err != nil {
			why = err.Error()
		}
		l.Done(r, time.Now(), why)
	})
}

// consoleLevel maps a console call to the levels of a PageLog.
func consoleLevel(typ string) string {
	switch strings.ToLower(typ) {
	case "error", "assert":
		return "error"
	case "warning", "warn":
		return "warning"
	case "info":
		return "info"
	case "debug":
		return "debug"
	}
	return "log"
}
