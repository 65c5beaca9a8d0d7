package trace

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// The page runs exactly one script, the viewer's: its CSP names that
// script's hash and nothing else may run or load.
func TestReportPolicyAllowsOnlyTheViewer(t *testing.T) {
	dir := writeTrace(t, map[string][]byte{"f1": page(t)},
		Event{Type: TypeRunStart, Task: "t", Frame: imageFrame("f1", "https://a.example/"), Shot: "shots/f1.png"},
		Event{Type: TypeModelTurn, Step: 1, Text: "done", Stop: "end_turn"},
		Event{Type: TypeRunEnd, Step: 1, Stop: "end_turn"},
	)
	path, err := WriteReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseReport(t, path)
	scripts := findAll(doc, isElem("script"))
	if len(scripts) != 1 {
		t.Fatalf("report has %d scripts, want the viewer's only", len(scripts))
	}
	sum := sha256.Sum256([]byte(textOf(scripts[0])))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	var csp string
	for _, m := range findAll(doc, isElem("meta")) {
		if attr(m, "http-equiv") == "Content-Security-Policy" {
			csp = attr(m, "content")
		}
	}
	want := "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src " + hash
	if csp != want {
		t.Errorf("Content-Security-Policy = %q, want %q", csp, want)
	}
}

// egressNote is a note as runner records an egress decision.
func egressNote(allowed bool, method, target, why string) Event {
	if allowed {
		return Event{Type: TypeNote, Text: fmt.Sprintf("egress allowed: %s %s (rule %s)", method, target, why)}
	}
	return Event{Type: TypeNote, Text: fmt.Sprintf("egress refused: %s %s: %s", method, target, why)}
}

// Forty-one egress decisions are one summary in the header, per host and
// verdict, with the list folded; other notes stay boxes of their own.
func TestReportFoldsEgressDecisions(t *testing.T) {
	evs := []Event{{Type: TypeRunStart, Task: "t"}}
	for range 40 {
		evs = append(evs, egressNote(true, "GET", "shop.example:443", "shop.example"))
	}
	evs = append(evs,
		egressNote(false, "CONNECT", "169.254.169.254:80", "link-local address not in the allowlist"),
		egressNote(true, "GET", "cdn.example:443", "cdn.example"),
		Event{Type: TypeNote, Text: "the sandbox restarted; relaunched at https://shop.example/"},
		Event{Type: TypeRunEnd, Stop: "end_turn"},
	)
	dir := writeTrace(t, nil, evs...)
	path, err := WriteReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseReport(t, path)
	var alerts []string
	for _, n := range findAll(doc, func(n *html.Node) bool { return strings.HasPrefix(attr(n, "class"), "alert") }) {
		alerts = append(alerts, textOf(n))
	}
	if diff := cmp.Diff([]string{"the sandbox restarted; relaunched at https://shop.example/"}, alerts); diff != "" {
		t.Errorf("header boxes (-want +got):\n%s", diff)
	}
	egress := findAll(doc, func(n *html.Node) bool { return attr(n, "class") == "egress" })
	if len(egress) != 1 {
		t.Fatalf("report has %d egress summaries, want 1", len(egress))
	}
	title := strings.Join(strings.Fields(textOf(findAll(egress[0], isElem("h2"))[0])), " ")
	if want := "Network: 42 connections through the egress proxy · 41 allowed · 1 refused"; title != want {
		t.Errorf("egress title = %q, want %q", title, want)
	}
	var rows []string
	for _, tr := range findAll(egress[0], isElem("tr"))[1:] {
		var cells []string
		for _, td := range findAll(tr, isElem("td")) {
			cells = append(cells, textOf(td))
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	want := []string{
		"169.254.169.254:80 | 0 | 1 | link-local address not in the allowlist", // refused first
		"shop.example:443 | 40 | 0 | rule shop.example",
		"cdn.example:443 | 1 | 0 | rule cdn.example",
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("egress hosts (-want +got):\n%s", diff)
	}
	details := findAll(egress[0], isElem("details"))
	if len(details) != 1 || attr(details[0], "open") != "" || len(findAll(details[0], isElem("li"))) != 42 {
		t.Errorf("egress details: %d <details>, want one, closed, listing the 42 decisions", len(details))
	}
}

// Each step gets its duration and a screenshot for it in the timeline,
// where every step takes the same room; the model's last word shows the
// screen it saw then, in its section too; each action gets its time.
func TestReportTimeline(t *testing.T) {
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	f1, f2 := imageFrame("f1", "https://a.example/"), imageFrame("f2", "https://a.example/2")
	click := actions.Action{Kind: actions.Click, At: actions.Pt(10, 10), HasAt: true}
	r := buildReport([]Event{
		{Type: TypeRunStart, Time: at(0), Task: "t", Frame: f1, Shot: "shots/f1.png"},
		{Type: TypeModelTurn, Time: at(time.Second), Step: 1, Text: "click"},
		{Type: TypeCall, Time: at(time.Second), Step: 1, CallID: "c1"},
		{Type: TypeAction, Time: at(2 * time.Second), Step: 1, CallID: "c1", Action: click, Mapped: screen.Mapped{Action: click}, FrameID: "f1", Elapsed: 40 * time.Millisecond},
		{Type: TypeResult, Time: at(2 * time.Second), Step: 1, CallID: "c1", Ran: 1, Frame: f2, Shot: "shots/f2.png"},
		{Type: TypeModelTurn, Time: at(4 * time.Second), Step: 2, Text: "done", Stop: "end_turn"},
		{Type: TypeRunEnd, Time: at(5 * time.Second), Step: 2, Stop: "end_turn"},
	}, func(string) ([]byte, error) { return page(t), nil })
	type step struct {
		Duration string
		Thumb    string
		Screen   string
	}
	var got []step
	for _, c := range r.Cards {
		s := step{Duration: c.Duration}
		if c.Thumb != nil {
			s.Thumb = c.Thumb.FrameID
		}
		if c.Screen != nil && c.Screen.Ref != "" {
			s.Screen = c.Screen.FrameID
		}
		got = append(got, s)
	}
	want := []step{
		{Duration: "3s", Thumb: "f2"},               // from its turn to the next one
		{Duration: "1s", Thumb: "f2", Screen: "f2"}, // to the end of the run; the screen as the last step left it
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	if e := r.Cards[0].Calls[0].Actions[0].Elapsed; e != "40ms" {
		t.Errorf("action time = %q, want 40ms", e)
	}
}

// A step's console and network tabs list what the page logged and
// requested during it, the first step's also what the start page did,
// with the failures counted and marked; the failed or refused steps are
// what the filter keeps.
func TestReportPageLogTabs(t *testing.T) {
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	f1, f2 := imageFrame("f1", "https://a.example/"), imageFrame("f2", "https://a.example/2")
	click := actions.Action{Kind: actions.Click, At: actions.Pt(10, 10), HasAt: true}
	nav := actions.Action{Kind: actions.Navigate, URL: "https://evil.example/"}
	dir := writeTrace(t, map[string][]byte{"f1": page(t), "f2": page(t)},
		Event{Type: TypeRunStart, Time: at(0), Task: "t", Frame: f1, Shot: "shots/f1.png", Page: screen.PageLog{
			Console:  []screen.ConsoleMessage{{Time: at(100 * time.Millisecond), Level: "log", Source: "console", Text: "ready"}},
			Requests: []screen.Request{{Time: at(0), Method: "GET", URL: "https://a.example/", Type: "document", Status: 200, Duration: 80 * time.Millisecond}},
		}},
		Event{Type: TypeModelTurn, Time: at(time.Second), Step: 1, Text: "click"},
		Event{Type: TypeCall, Time: at(time.Second), Step: 1, CallID: "c1"},
		Event{Type: TypeAction, Time: at(time.Second), Step: 1, CallID: "c1", Action: click, Mapped: screen.Mapped{Action: click}, FrameID: "f1"},
		Event{Type: TypeResult, Time: at(2 * time.Second), Step: 1, CallID: "c1", Ran: 1, Frame: f2, Shot: "shots/f2.png", Page: screen.PageLog{
			Console: []screen.ConsoleMessage{
				{Time: at(1500 * time.Millisecond), Level: "error", Source: "exception", Text: "Uncaught Error: <b>boom</b>", Where: "https://a.example/app.js:3"},
				{Time: at(1600 * time.Millisecond), Level: "warning", Source: "console", Text: "slow"},
			},
			Requests: []screen.Request{
				{Time: at(1200 * time.Millisecond), Method: "POST", URL: "https://a.example/api", Type: "fetch", Status: 500, Duration: 30 * time.Millisecond},
				{Time: at(1300 * time.Millisecond), Method: "GET", URL: "https://cdn.example/x.js", Type: "script", Error: "net::ERR_CONNECTION_REFUSED"},
				{Time: at(1400 * time.Millisecond), Method: "GET", URL: "https://a.example/stream", Type: "eventsource", Pending: true},
			},
			DroppedRequests: 7,
		}},
		Event{Type: TypeModelTurn, Time: at(3 * time.Second), Step: 2, Text: "leave"},
		Event{Type: TypeCall, Time: at(3 * time.Second), Step: 2, CallID: "c2"},
		Event{Type: TypeAction, Time: at(3 * time.Second), Step: 2, CallID: "c2", Action: nav, FrameID: "f2", Error: "refused: evil.example is not allowed"},
		Event{Type: TypeResult, Time: at(3 * time.Second), Step: 2, CallID: "c2", Error: "refused", Frame: f2, Shot: "shots/f2.png"},
		Event{Type: TypeModelTurn, Time: at(4 * time.Second), Step: 3, Text: "done", Stop: "end_turn"},
		Event{Type: TypeRunEnd, Time: at(5 * time.Second), Step: 3, Stop: "end_turn"},
	)
	path, err := WriteReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseReport(t, path)
	rows := func(section *html.Node, table string) []string {
		var out []string
		for _, tb := range findAll(section, func(n *html.Node) bool { return n.Data == "table" && attr(n, "class") == "log "+table }) {
			for _, tr := range findAll(tb, isElem("tr"))[1:] {
				var cells []string
				for _, td := range findAll(tr, isElem("td")) {
					cells = append(cells, strings.Join(strings.Fields(textOf(td)), " "))
				}
				out = append(out, attr(tr, "class")+"|"+strings.Join(cells, "|"))
			}
		}
		return out
	}
	sections := findAll(doc, func(n *html.Node) bool { return n.Data == "section" && strings.HasPrefix(attr(n, "class"), "step") })
	if len(sections) != 3 {
		t.Fatalf("%d step sections, want 3", len(sections))
	}
	wantConsole := []string{
		"|+100ms|log|ready|console",
		"bad|+1.5s|error|Uncaught Error: <b>boom</b>|exceptionhttps://a.example/app.js:3",
		"warn|+1.6s|warning|slow|console",
	}
	if diff := cmp.Diff(wantConsole, rows(sections[0], "console")); diff != "" {
		t.Errorf("step 1's console (-want +got):\n%s", diff)
	}
	wantNetwork := []string{
		"|+0s|GET|https://a.example/|200|document|80ms",
		"bad|+1.2s|POST|https://a.example/api|500|fetch|30ms",
		"bad|+1.3s|GET|https://cdn.example/x.js|failednet::ERR_CONNECTION_REFUSED|script|—",
		"|+1.4s|GET|https://a.example/stream|pending|eventsource|—",
	}
	if diff := cmp.Diff(wantNetwork, rows(sections[0], "network")); diff != "" {
		t.Errorf("step 1's network (-want +got):\n%s", diff)
	}
	var tabs []string
	for _, b := range findAll(sections[0], func(n *html.Node) bool { return attr(n, "role") == "tab" }) {
		tabs = append(tabs, strings.Join(strings.Fields(textOf(b)), " "))
	}
	if diff := cmp.Diff([]string{"Actions", "Console 3 · 1 error", "Network 4 · 2 failed"}, tabs); diff != "" {
		t.Errorf("step 1's tabs (-want +got):\n%s", diff)
	}
	if !strings.Contains(textOf(sections[0]), "7 older requests were let go") {
		t.Errorf("step 1 does not say that the display let 7 requests go")
	}
	if rows(sections[1], "console") != nil || !strings.Contains(textOf(sections[1]), "The page logged nothing during this step.") {
		t.Errorf("step 2's console = %q, want it empty and saying so", rows(sections[1], "console"))
	}
	// The filter keeps the failed step 1 (a 500 is the page's, not the
	// step's: step 1 did not fail) and the refused step 2.
	var failed []string
	for _, s := range sections {
		if strings.Contains(attr(s, "class"), "failed") {
			failed = append(failed, attr(s, "id"))
		}
	}
	if diff := cmp.Diff([]string{"step-2"}, failed); diff != "" {
		t.Errorf("failed or refused steps (-want +got):\n%s", diff)
	}
	filter := findAll(doc, func(n *html.Node) bool { return attr(n, "data-go") == "failed" })
	if len(filter) != 1 || strings.TrimSpace(textOf(filter[0])) != "Failed or refused only (1)" {
		t.Errorf("filter button: %d found, want one saying %q", len(filter), "Failed or refused only (1)")
	}
}
