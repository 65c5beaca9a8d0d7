package screentest

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// An Outcome is how one behaviour of a suite went on one display: passed,
// refused in words (a behaviour the display cannot have, which it said so
// with screen.ErrUnsupported, or a download its session keeps none of), or
// failed.
type Outcome struct {
	Behaviour string
	Failed    bool
	Refused   string // the display's words, when it refused
}

// A Reporter receives the Outcome of each behaviour as it ends.
type Reporter func(Outcome)

// Behaviours of RunBrowser, in the order it checks them; the names are
// those of its subtests and of its Outcomes.
var Behaviours = []string{
	"tabs and popups", "dialog before load", "dialog during load", "dialog after load", "beforeunload",
	"dialog in a popup", "dialog in a frame", "native select", "upload", "download", "frames",
	"page zoom", "hover", "HTML5 drag", "pointer drag", "wheel over a textarea", "wheel over a scroll box",
	"wheel over the page", "never-loading page",
}

// uploadText is the content of the file the upload check hands a page.
const uploadText = "hello upload"

// RunBrowser checks what a browser display (one that declares Pages) does
// on pages that behave as real ones do, each page checking its own state
// and reporting it to the suite's server: tabs and popups; JavaScript
// dialogs opened before the page has a body, while it loads, after it
// loaded, when it is left (beforeunload), in a popup and in same- and
// cross-origin frames; a native select; an upload (what the page's input
// received, and what the display says it received); a download (a note,
// whether the display keeps it or refuses it); input in same- and
// cross-origin frames; page zoom; hover; HTML5 and pointer drags; the
// wheel over a textarea, a scroll box and the page, several turns each;
// and a page that never finishes loading. It opens one display of
// viewport's size at dpr and runs the behaviours in order, each as a
// subtest named as in Behaviours; report, if not nil, receives each one's
// Outcome.
func RunBrowser(t *testing.T, dpr float64, open Opener, report Reporter) {
	t.Helper()
	srv := startServer(t)
	o := Options{Viewport: viewport, DPR: dpr, Pages: srv.url, Other: srv.other}
	dir := t.TempDir()
	file := filepath.Join(dir, "hello.txt")
	if err := os.WriteFile(file, []byte(uploadText+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &browserChecker{d: open(t, o), o: o, srv: srv, file: file}
	checks := map[string]func(t *testing.T){
		"tabs and popups":         b.tabs,
		"dialog before load":      b.dialogWhen("before"),
		"dialog during load":      b.dialogWhen("during"),
		"dialog after load":       b.dialogAfterLoad,
		"beforeunload":            b.beforeUnload,
		"dialog in a popup":       b.dialogInPopup,
		"dialog in a frame":       b.dialogInFrames,
		"native select":           b.nativeSelect,
		"upload":                  b.upload,
		"download":                b.download,
		"frames":                  b.frames,
		"page zoom":               b.pageZoom,
		"hover":                   b.hover,
		"HTML5 drag":              b.html5Drag,
		"pointer drag":            b.pointerDrag,
		"wheel over a textarea":   b.wheel("textarea", actions.Pt(190, 140)),
		"wheel over a scroll box": b.wheel("scroll box", actions.Pt(550, 140)),
		"wheel over the page":     b.wheel("page", actions.Pt(800, 450)),
		"never-loading page":      b.neverLoading,
	}
	for _, name := range Behaviours {
		t.Run(name, func(t *testing.T) {
			b.refusal = ""
			if report != nil {
				defer func() {
					report(Outcome{Behaviour: name, Failed: t.Failed(), Refused: b.refusal})
				}()
			}
			defer b.oneTab(t)
			checks[name](t)
		})
	}
}

// browserChecker runs RunBrowser's checks on one display, in order.
type browserChecker struct {
	d    Display
	o    Options
	srv  *server
	file string // the file to upload

	session string  // the page loaded last reports under it
	seen    []event // what it reported so far
	since   int     // seen[since:] came after the last action
	refusal string  // the current behaviour's refusal, if any
}

// load navigates to a page of testdata/browser (query added to its own,
// which names the session its events go to) and waits for it to settle.
// A dialog the page opens as it loads does not fail the load.
func (b *browserChecker) load(t *testing.T, page, query string) string {
	t.Helper()
	b.session, b.seen, b.since = b.srv.newSession(), nil, 0
	url := fmt.Sprintf("%s/browser/%s?s=%s%s", b.o.Pages, page, b.session, query)
	if err := b.d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: url}}); err != nil &&
		!strings.Contains(err.Error(), "dialog") {
		t.Fatalf("Perform(navigate to %s) = %v", url, err)
	}
	return url
}

// shot captures the display at a tenth of its size: the notes, the URL
// and the settling are what most checks want.
func (b *browserChecker) shot(t *testing.T) screen.Shot {
	t.Helper()
	vp := b.o.Viewport
	shot, err := b.d.Capture(t.Context(), screen.CaptureOptions{Size: screen.Size{W: vp.W / 10, H: vp.H / 10}, Format: screen.JPEG, Quality: 50})
	if err != nil {
		t.Fatalf("Capture() = %v", err)
	}
	return shot
}

// until captures the display until the page has reported, since the last
// action, an event that want accepts (a page's report can follow a
// promise, such as reading a file): at most maxCaptures captures, each of
// which waits for the network to be quiet. It returns the events since the
// last action, and the notes of its captures.
func (b *browserChecker) until(t *testing.T, what string, want func(event) bool) ([]event, []string) {
	t.Helper()
	const maxCaptures = 20
	var notes []string
	for range maxCaptures {
		b.seen = append(b.seen, b.srv.take(b.session)...)
		if evs := b.seen[b.since:]; slices.ContainsFunc(evs, want) {
			return evs, notes
		}
		notes = append(notes, b.shot(t).Events...)
	}
	t.Fatalf("%s: the page reported %+v since the last action, over %d captures (notes %q)", what, b.seen[b.since:], maxCaptures, notes)
	return nil, nil
}

// first is until, answering the first event that matches want, and the
// notes.
func (b *browserChecker) first(t *testing.T, what string, want func(event) bool) (event, []string) {
	t.Helper()
	evs, notes := b.until(t, what, want)
	return evs[slices.IndexFunc(evs, want)], notes
}

// untilNote captures the display until a note contains s.
func (b *browserChecker) untilNote(t *testing.T, s string) []string {
	t.Helper()
	const maxCaptures = 20
	var notes []string
	for range maxCaptures {
		notes = append(notes, b.shot(t).Events...)
		if hasNote(notes, s) {
			return notes
		}
	}
	t.Fatalf("no note saying %q over %d captures: %q", s, maxCaptures, notes)
	return nil
}

func hasNote(notes []string, s string) bool {
	return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, s) })
}

// do performs a, failing t on an error.
func (b *browserChecker) do(t *testing.T, a actions.Action) {
	t.Helper()
	b.seen = append(b.seen, b.srv.take(b.session)...)
	b.since = len(b.seen)
	if err := b.d.Perform(t.Context(), screen.Mapped{Action: a}); err != nil {
		t.Fatalf("Perform(%s) = %v", describe(a), err)
	}
}

// answer answers the open dialog.
func (b *browserChecker) answer(t *testing.T, accept bool, text string) {
	t.Helper()
	b.do(t, actions.Action{Kind: actions.Dialog, Accept: accept, Text: text})
}

// clickHere clicks the page's "here" button at p and checks that the
// page got the click as target: the page answers input.
func (b *browserChecker) clickHere(t *testing.T, p actions.Point, target string) {
	t.Helper()
	b.do(t, click(p))
	b.until(t, "a click on "+target, func(e event) bool { return e.Type == "click" && e.Target == target })
}

func (b *browserChecker) tabs(t *testing.T) {
	opener := b.load(t, "tabs.html", "")
	b.shot(t)
	b.do(t, click(actions.Pt(160, 60))) // target=_blank
	b.opened(t, "linked")
	b.clickHere(t, actions.Pt(160, 60), "linked") // the new tab is the one shown
	b.do(t, actions.Action{Kind: actions.SwitchTab, Tab: 0})
	if shot := b.shot(t); shot.Frame.URL != opener {
		t.Errorf("after switch_tab 0: URL %s, want the opener %s", shot.Frame.URL, opener)
	}
	b.clickHere(t, actions.Pt(160, 220), "opener")
	b.do(t, click(actions.Pt(160, 140))) // window.open
	evs := b.opened(t, "popup")
	for _, e := range evs {
		if e.Type == "opened" && e.Name == "popup" && e.Value != "true" {
			t.Errorf("the popup has no opener (window.opener !== null is %s)", e.Value)
		}
	}
	b.clickHere(t, actions.Pt(160, 60), "popup")
	b.do(t, click(actions.Pt(160, 140))) // the popup's window.close()
	shot := b.shot(t)
	if strings.Contains(shot.Frame.URL, "name=popup") {
		t.Errorf("after the popup closed itself: the display still shows it (%s)", shot.Frame.URL)
	}
	// Back to one tab: close the others (the linked tab is tab 1).
	b.do(t, actions.Action{Kind: actions.SwitchTab, Tab: 0})
	b.do(t, actions.Action{Kind: actions.CloseTab, Tab: 1})
	b.do(t, actions.Action{Kind: actions.ListTabs})
	notes := b.shot(t).Events
	var tabs string // list_tabs's note: the last list of tabs
	for _, n := range notes {
		if strings.Contains(n, "Open tabs") {
			tabs = n
		}
	}
	if tabs == "" || strings.Contains(tabs, "[1]") {
		t.Errorf("list_tabs after closing the other tabs: notes %q, want a list of one tab", notes)
	}
	b.clickHere(t, actions.Pt(160, 220), "opener")
}

// oneTab, after a behaviour that failed, closes the tabs it may have left
// open, so that the next behaviour loads its page in the first tab at the
// viewport's size rather than in a popup of another size.
func (b *browserChecker) oneTab(t *testing.T) {
	if !t.Failed() {
		return
	}
	for range 8 {
		if b.d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.CloseTab, Tab: 1}}) != nil {
			break
		}
	}
	b.d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.SwitchTab, Tab: 0}})
}

// opened waits for the tab named name (tab.html) to say it opened and for
// the display to say that it shows the new tab, as an agent sees it in the
// capture after its click; an action sent before that may reach the opener
// (the display learns of the tab a moment after the page loads). It
// returns the events since the last action.
func (b *browserChecker) opened(t *testing.T, name string) []event {
	t.Helper()
	evs, notes := b.until(t, "the "+name+" tab", func(e event) bool { return e.Type == "opened" && e.Name == name })
	if !hasNote(notes, "is now the active tab") {
		b.untilNote(t, "is now the active tab")
	}
	return evs
}

// dialogWhen checks a dialog a page opens as it loads: before its body
// exists (an alert), or while an image still loads (a confirm).
func (b *browserChecker) dialogWhen(when string) func(t *testing.T) {
	return func(t *testing.T) {
		b.load(t, "dialogs.html", "&when="+when)
		want := map[string]string{"before": "before the body", "during": "still loading"}[when]
		b.untilNote(t, want)
		accept := when == "before" // dismiss the confirm: the page must hear false
		b.answer(t, accept, "")
		evs, _ := b.until(t, "the answer", func(e event) bool { return e.Type == "answered" && e.Name == when })
		for _, e := range evs {
			if when == "during" && e.Type == "answered" && e.Value != "false" {
				t.Errorf("the page's confirm returned %s, want false (dismissed)", e.Value)
			}
		}
		b.until(t, "the page's load", func(e event) bool { return e.Type == "load" })
		b.clickHere(t, actions.Pt(160, 240), "here")
	}
}

func (b *browserChecker) dialogAfterLoad(t *testing.T) {
	b.load(t, "dialogs.html", "")
	b.until(t, "the page's load", func(e event) bool { return e.Type == "load" })
	for _, tt := range []struct {
		at     actions.Point
		name   string
		accept bool
		text   string
		want   string // the page's answer
	}{
		{actions.Pt(160, 60), "alert", true, "", ""},
		{actions.Pt(160, 120), "confirm", true, "", "true"},
		{actions.Pt(160, 120), "confirm", false, "", "false"},
		{actions.Pt(160, 180), "prompt", true, "Ada", "Ada"},
		{actions.Pt(160, 180), "prompt", false, "", "null"},
	} {
		b.do(t, click(tt.at))
		b.untilNote(t, tt.name)
		// While the dialog is open, other input is refused in words.
		if err := b.d.Perform(t.Context(), screen.Mapped{Action: click(actions.Pt(160, 240))}); err == nil || !strings.Contains(err.Error(), "dialog") {
			t.Errorf("Perform(click) with a %s open = %v, want an error naming the dialog", tt.name, err)
		}
		b.answer(t, tt.accept, tt.text)
		e, _ := b.first(t, "the "+tt.name+"'s answer", func(e event) bool { return e.Type == "answered" && e.Name == tt.name })
		if got := e.Value; got != tt.want {
			t.Errorf("%s answered (accept %v, text %q): the page got %q, want %q", tt.name, tt.accept, tt.text, got, tt.want)
		}
	}
	b.clickHere(t, actions.Pt(160, 240), "here")
}

func (b *browserChecker) beforeUnload(t *testing.T) {
	leave := b.load(t, "leave.html", "")
	b.shot(t)
	b.do(t, click(actions.Pt(190, 80)))
	b.do(t, actions.Action{Kind: actions.Type, Text: "draft"})
	b.shot(t)
	next := fmt.Sprintf("%s/browser/tabs.html?s=%s", b.o.Pages, b.session)
	leaving := actions.Action{Kind: actions.Navigate, URL: next}
	// Leaving asks; whether Navigate waits for the answer or returns
	// with the dialog open is the display's business, the note is not.
	askToLeave := func() {
		t.Helper()
		if err := b.d.Perform(t.Context(), screen.Mapped{Action: leaving}); err != nil && !strings.Contains(err.Error(), "dialog") {
			t.Fatalf("Perform(navigate away from a page that asks) = %v", err)
		}
	}
	askToLeave()
	b.untilNote(t, "beforeunload")
	b.answer(t, false, "") // stay
	if shot := b.shot(t); shot.Frame.URL != leave {
		t.Errorf("after staying: URL %s, want %s", shot.Frame.URL, leave)
	}
	askToLeave()
	b.untilNote(t, "beforeunload")
	b.answer(t, true, "") // leave
	b.until(t, "the next page's load", func(e event) bool { return e.Type == "load" })
	if shot := b.shot(t); shot.Frame.URL != next {
		t.Errorf("after leaving: URL %s, want %s", shot.Frame.URL, next)
	}
}

// dialogInPopup: a popup's dialog (once the display follows the popup;
// see screen/cdp's dialogs.go for one the popup opens as it loads).
func (b *browserChecker) dialogInPopup(t *testing.T) {
	b.load(t, "tabs.html", "")
	b.shot(t)
	b.do(t, click(actions.Pt(160, 140)))
	b.opened(t, "popup")
	b.do(t, click(actions.Pt(160, 220)))
	b.untilNote(t, "hello from popup")
	b.answer(t, true, "")
	b.until(t, "the popup's answer", func(e event) bool { return e.Type == "alerted" && e.Name == "popup" })
	b.clickHere(t, actions.Pt(160, 60), "popup")
	b.do(t, click(actions.Pt(160, 140))) // the popup closes itself
	b.shot(t)
}

func (b *browserChecker) dialogInFrames(t *testing.T) {
	b.load(t, "frames.html", "&other="+b.o.Other)
	b.until(t, "the frames' loads", func(e event) bool { return e.Type == "load" && e.Name == "cross" })
	for _, tt := range []struct {
		name string
		at   actions.Point
	}{{"same", actions.Pt(160, 198)}, {"cross", actions.Pt(520, 198)}} {
		b.do(t, click(tt.at))
		b.untilNote(t, "from the "+tt.name+" frame")
		b.answer(t, true, "")
		b.until(t, "the "+tt.name+" frame's answer", func(e event) bool { return e.Type == "answered" && e.Name == tt.name })
	}
}

// Select menus: the display shows the options of an open select below it,
// a row of 24 px each, where a click chooses one (screen/cdp draws them in
// the page, as headless Chromium draws the native menu nowhere).
func (b *browserChecker) nativeSelect(t *testing.T) {
	b.load(t, "select.html", "")
	b.shot(t)
	b.do(t, click(actions.Pt(160, 56)))
	b.shot(t)
	b.do(t, click(actions.Pt(100, 72+2*24+12))) // the third option
	if e, _ := b.first(t, "the choice", func(e event) bool { return e.Type == "change" }); e.Value != "blue" {
		t.Errorf("chose %q, want blue (the third option)", e.Value)
	}
}

func (b *browserChecker) upload(t *testing.T) {
	b.load(t, "upload.html", "")
	b.shot(t)
	b.do(t, click(actions.Pt(190, 60)))
	b.untilNote(t, "file chooser is open")
	b.do(t, actions.Action{Kind: actions.Upload, Files: []string{b.file}})
	e, notes := b.first(t, "the file", func(e event) bool { return e.Type == "received" })
	size := len(uploadText) + 1
	if e.Name != "hello.txt" || e.Size != size || e.Value != uploadText+"\n" {
		t.Errorf("the page received %q (%d bytes, %q), want hello.txt (%d bytes)", e.Name, e.Size, e.Value, size)
	}
	// The display says what the page received, not only what it handed:
	// in the notes of the captures above, or of the next one.
	if want := fmt.Sprintf("holds hello.txt (%d bytes)", size); !hasNote(notes, want) {
		if next := b.shot(t).Events; !hasNote(next, want) {
			t.Errorf("notes after the upload %q, want one saying the input %s", append(notes, next...), want)
		}
	}
}

// download: the display keeps the file or refuses it (a session that
// keeps no downloads), and says which in a note; it never stays silent.
func (b *browserChecker) download(t *testing.T) {
	b.load(t, "download.html", "")
	b.shot(t)
	b.do(t, click(actions.Pt(160, 60)))
	notes := b.untilNote(t, "report.txt")
	i := slices.IndexFunc(notes, func(n string) bool { return strings.Contains(n, "report.txt") })
	switch n := notes[i]; {
	case strings.Contains(n, "Downloaded report.txt (10 bytes)"):
	case strings.Contains(n, "refused") || strings.Contains(n, "not saved") || strings.Contains(n, "canceled"):
		b.refusal = n
	default:
		t.Errorf("the note about the download, %q, says neither that it was kept nor that it was refused", n)
	}
}

func (b *browserChecker) frames(t *testing.T) {
	b.load(t, "frames.html", "&other="+b.o.Other)
	b.until(t, "the frames' loads", func(e event) bool { return e.Type == "load" && e.Name == "cross" })
	b.clickHere(t, actions.Pt(160, 78), "same")
	b.clickHere(t, actions.Pt(520, 78), "cross")
	for _, tt := range []struct {
		name string
		at   actions.Point
	}{{"same", actions.Pt(160, 138)}, {"cross", actions.Pt(520, 138)}} {
		b.do(t, click(tt.at))
		b.do(t, actions.Action{Kind: actions.Type, Text: "abc"})
		b.until(t, "typing in the "+tt.name+" frame", func(e event) bool {
			return e.Type == "input" && e.Target == tt.name && e.Value == "abc"
		})
	}
}

func (b *browserChecker) pageZoom(t *testing.T) {
	b.load(t, "zoom.html", "")
	b.shot(t)
	plus := actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "+"}}
	if err := b.d.Perform(t.Context(), screen.Mapped{Action: plus}); errors.Is(err, screen.ErrUnsupported) {
		b.refusal = err.Error() // a browser without page zoom, which says so
		return
	} else if err != nil {
		t.Fatalf("Perform(%s) = %v", describe(plus), err)
	}
	for range 2 {
		b.do(t, plus)
	}
	shot := b.shot(t)
	if shot.Frame.Zoom != 1.5 {
		t.Errorf("after three ctrl+plus: Frame.Zoom = %g, want 1.5", shot.Frame.Zoom)
	}
	b.until(t, "the page's resize", func(e event) bool { return e.Type == "resize" && math.Abs(e.DPR-b.o.DPR*1.5) < 0.01 })
	// A click in viewport px lands where the zoomed page shows it.
	b.do(t, click(actions.Pt(300, 225)))
	e, _ := b.first(t, "the click", func(e event) bool { return e.Type == "click" })
	if e.Target != "box" || math.Abs(e.X-200) > 1 || math.Abs(e.Y-150) > 1 {
		t.Errorf("a click at viewport (300, 225) at 150%%: the page got %s at (%g, %g), want box at (200, 150)", e.Target, e.X, e.Y)
	}
	b.do(t, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "0"}})
	if shot := b.shot(t); shot.Frame.Zoom != 1 {
		t.Errorf("after ctrl+0: Frame.Zoom = %g, want 1", shot.Frame.Zoom)
	}
}

var (
	hoverRest = color.RGBA{0, 0, 255, 255}
	hoverOn   = color.RGBA{255, 0, 0, 255}
)

// colourAt captures the whole viewport at its CSS size and returns the
// colour at p.
func (b *browserChecker) colourAt(t *testing.T, p actions.Point) color.Color {
	t.Helper()
	shot, err := b.d.Capture(t.Context(), screen.CaptureOptions{Size: b.o.Viewport, Format: screen.PNG})
	if err != nil {
		t.Fatalf("Capture() = %v", err)
	}
	img, err := decodeImage(shot.Data, screen.PNG)
	if err != nil {
		t.Fatal(err)
	}
	return img.At(int(p.X), int(p.Y))
}

func (b *browserChecker) hover(t *testing.T) {
	b.load(t, "pointer.html", "")
	b.shot(t)
	in := actions.Pt(140, 90)
	if c := b.colourAt(t, in); !near(c, hoverRest, tolPNG) {
		t.Errorf("the box before hovering is %s, want %s", rgb(c), rgb(hoverRest))
	}
	b.do(t, actions.Action{Kind: actions.Move, At: in, HasAt: true})
	b.until(t, "mouseenter", func(e event) bool { return e.Type == "mouseenter" })
	if c := b.colourAt(t, in); !near(c, hoverOn, tolPNG) {
		t.Errorf("the box under the pointer is %s, want its :hover colour %s", rgb(c), rgb(hoverOn))
	}
	b.do(t, actions.Action{Kind: actions.Move, At: actions.Pt(140, 500), HasAt: true})
	if c := b.colourAt(t, in); !near(c, hoverRest, tolPNG) {
		t.Errorf("the box after the pointer left is %s, want %s", rgb(c), rgb(hoverRest))
	}
}

func (b *browserChecker) html5Drag(t *testing.T) {
	b.load(t, "pointer.html", "")
	b.shot(t)
	b.do(t, actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(90, 230), actions.Pt(300, 240), actions.Pt(500, 250)}})
	if e, _ := b.first(t, "the drop", func(e event) bool { return e.Type == "drop" }); e.Value != "payload-1" {
		t.Errorf("the drop carried %q, want payload-1", e.Value)
	}
}

func (b *browserChecker) pointerDrag(t *testing.T) {
	b.load(t, "pointer.html", "")
	b.shot(t)
	b.do(t, actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(60, 380), actions.Pt(300, 380), actions.Pt(500, 380)}})
	// The knob's centre follows the pointer: 500 - 40 (track) - 20.
	if e, _ := b.first(t, "the slide", func(e event) bool { return e.Type == "slid" }); math.Abs(e.X-440) > 2 {
		t.Errorf("the knob ended at %g, want 440", e.X)
	}
}

// wheel turns the wheel over what lies at p in wheel.html: a textarea, a
// scroll box of rows, or the page. Several turns of 200 px at a time
// scroll it past what was painted at first (a box of rows scrolled that
// far once left frame-controlled Chromium without a frame, at DPR 1), and
// only it.
func (b *browserChecker) wheel(what string, p actions.Point) func(t *testing.T) {
	return func(t *testing.T) {
		b.load(t, "wheel.html", "")
		b.shot(t)
		const turns, step = 6, 200
		n := turns
		if what == "page" {
			n = 2
		}
		for i := range n {
			b.do(t, actions.Action{Kind: actions.Scroll, At: p, HasAt: true, DeltaY: step})
			b.until(t, fmt.Sprintf("turn %d over the %s", i+1, what), func(e event) bool { return e.Type == "scroll" })
		}
		// A smooth scroll reports as it goes: its last report is in once
		// a capture has settled after it.
		shot := b.shot(t)
		b.seen = append(b.seen, b.srv.take(b.session)...)
		last := b.seen[len(b.seen)-1]
		want := float64(n * step)
		got := map[string]float64{"textarea": parse(last.Value), "scroll box": last.BoxTop, "page": last.ScrollY}
		for k, v := range got {
			switch {
			case k == what && math.Abs(v-want) > want/4:
				t.Errorf("after %d turns of %d px over the %s: it scrolled %g px, want about %g", n, step, what, v, want)
			case k != what && v != 0:
				t.Errorf("after %d turns over the %s: the %s scrolled too (%g px)", n, what, k, v)
			}
		}
		if what == "page" {
			if math.Abs(shot.Frame.Scroll.Y-last.ScrollY) > 1 {
				t.Errorf("Frame.Scroll.Y = %g, want the page's %g", shot.Frame.Scroll.Y, last.ScrollY)
			}
		}
	}
}

func parse(s string) float64 {
	var f float64
	fmt.Sscan(s, &f)
	return f
}

// neverLoading: a page whose image never arrives still gets its
// screenshots and input, within bounds, and the display goes elsewhere.
func (b *browserChecker) neverLoading(t *testing.T) {
	start := time.Now()
	b.load(t, "never.html", "")
	shot := b.shot(t)
	if took := time.Since(start); took > time.Minute {
		t.Errorf("navigating to a page that never loads and a capture took %v", took)
	}
	t.Logf("settle on a page that never loads: %+v", shot.Frame.Settle)
	b.until(t, "the page's script", func(e event) bool { return e.Type == "parsed" })
	b.clickHere(t, actions.Pt(160, 60), "never")
	b.load(t, "tabs.html", "")
	b.until(t, "the next page's load", func(e event) bool { return e.Type == "load" })
}

// Refusals that a display without Pages (a desktop) owes the browser
// behaviours it cannot have: the actions that only a browser performs.
var browserOnly = []actions.Action{
	{Kind: actions.Navigate, URL: "https://example.com/"}, {Kind: actions.ListTabs}, {Kind: actions.SwitchTab, Tab: 0}, {Kind: actions.CloseTab, Tab: 1},
	{Kind: actions.Dialog, Accept: true}, {Kind: actions.Upload, Files: []string{"hello.txt"}},
}

// RunRefusals checks that a display that is not a browser (a desktop)
// refuses each action only a browser performs (tabs, dialogs, uploads)
// with an error wrapping screen.ErrUnsupported, whose words report
// receives as the Outcome's refusal.
func RunRefusals(t *testing.T, d Display, report Reporter) {
	t.Helper()
	for _, a := range browserOnly {
		t.Run(a.Kind.String(), func(t *testing.T) {
			err := d.Perform(t.Context(), screen.Mapped{Action: a})
			if !errors.Is(err, screen.ErrUnsupported) {
				t.Errorf("Perform(%s) = %v, want an error wrapping screen.ErrUnsupported", describe(a), err)
			}
			if report != nil {
				o := Outcome{Behaviour: a.Kind.String(), Failed: t.Failed()}
				if err != nil {
					o.Refused = err.Error()
				}
				report(o)
			}
		})
	}
}
