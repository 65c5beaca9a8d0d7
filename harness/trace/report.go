package trace

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"image"
	_ "image/jpeg" // decode screenshot sizes
	_ "image/png"
	"io"
	"math"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

//go:embed report.tmpl
var reportSource string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"f": func(v float64) string { return formatNum(v) },
}).Parse(reportSource))

// WriteReport renders the trace in dir as dir/report.html and returns its
// path. The page is one self-contained file: the screenshots are inlined and
// it loads nothing, so it works from file:// and as an attachment. It is a
// step-through trace viewer: a timeline of the steps, and one pane per step
// with the model's words, the action table with timings, and the screenshot
// the model saw (its actions marked) beside the one it got back; the arrow
// keys (or j and k, Home and End) move between steps. Its one script is
// static, holds no data from the trace, and is the only one the page's
// Content-Security-Policy lets run; without it every step shows in turn.
// The run's egress decisions are summarized per host and verdict, their
// list folded. A trace that ends in an unfinished event (see Read) still
// renders, with a warning on the page.
func WriteReport(dir string) (string, error) {
	var buf bytes.Buffer
	if err := Render(&buf, dir); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	if err := writeFileAtomic(dir, ReportFile, buf.Bytes(), true); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return filepath.Join(dir, ReportFile), nil
}

// Render writes the report of the trace in dir to w, as WriteReport
// writes report.html, without writing a file: a server renders the trace
// of a run still going, or gone by, on request. A page served with it
// must be served under its policy, ReportCSP.
func Render(w io.Writer, dir string) error {
	evs, rerr := Read(dir)
	if rerr != nil && !errors.Is(rerr, ErrTruncated) {
		return rerr
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	r := buildReport(evs, func(rel string) ([]byte, error) {
		if !filepath.IsLocal(filepath.FromSlash(rel)) {
			return nil, fmt.Errorf("%q is not a path inside the trace", rel)
		}
		return root.ReadFile(filepath.FromSlash(rel))
	})
	if rerr != nil {
		r.Warnings = append(r.Warnings, rerr.Error())
	}
	if err := reportTmpl.Execute(w, r); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return nil
}

// report is what the template shows.
type report struct {
	Task     string
	Model    string
	Started  string
	Outcome  string // the stop reason, or "incomplete"
	Verdict  string // the outcome in words
	Class    string // ok, warn or bad: how the outcome is coloured
	Steps    int
	Elapsed  string
	Error    string // the run's own error
	Usage    Usage
	Calls    int
	Actions  int
	Errors   int // steps with a failure (a failed or refused action, an error)
	Warnings []string
	Notes    []note // events outside any step, egress decisions aside
	Egress   *egressSummary
	Cards    []*card
	Images   []imageDef
}

type note struct {
	Text  string
	Error bool
}

// card is one step.
type card struct {
	Step    int
	Offset  string // since the run started
	Elapsed string // the model's turn
	Text    string
	Stop    string
	Usage   Usage
	Summary string // the step's action kinds, for the index
	Failed  bool
	Final   bool // the model's last word: no calls, and a stop other than tool_use
	Notes   []note
	Calls   []*callView

	// Refused says that the policy, a rule or a human refused an action
	// of the step (Failed is set too).
	Refused bool
	// Screen is, for a step without calls (the model's last word), the
	// screenshot the model saw then.
	Screen *shotView

	// What the page logged and requested during the step (after its
	// calls' actions, up to their screenshots; the first step also holds
	// the start page's), and how many of each went wrong.
	Console       []consoleRow
	Requests      []requestRow
	ConsoleErrors int
	FailedReqs    int
	Dropped       string // what the display let go, in words

	// The timeline: how long the step took, and the screenshot that
	// stands for it.
	Duration string
	Thumb    *shotView

	start, last time.Time // its first and last event
	dur         time.Duration
}

// consoleRow is one console message as a step's Console tab shows it.
type consoleRow struct {
	At    string // since the run started
	Clock string // the wall clock, to the millisecond
	Level string
	Class string // bad, warn or empty
	Src   string
	Text  string
	Where string
}

// requestRow is one request as a step's Network tab shows it.
type requestRow struct {
	At       string
	Clock    string
	Method   string
	URL      string
	Type     string
	Status   string // the HTTP status, "pending", or "failed"
	Class    string // bad for a failure or a status of 400 and above
	Error    string
	Duration string
}

type callView struct {
	ID      string
	Name    string
	Space   string // empty for image space
	Error   string // the call did not decode
	Actions []actionView
	Result  *resultView
	Before  *shotView // what the model saw, with the actions marked
	After   *shotView // taken after the batch

	space     screen.Space
	frameID   string // the screenshot the coordinates refer to
	fromModel bool   // frameID came from an action, not a guess
	events    []Event
}

type actionView struct {
	N       int // from 1, as marked on the screenshot
	Kind    string
	Model   string // coordinates the model gave
	CSS     string // coordinates performed
	Detail  string
	Status  string // ran, failed, refused, not run
	Class   string // ok, bad, muted
	Error   string
	Stale   bool
	FrameID string
	Mark    string // the marker's colour class; empty if it has none
	Elapsed string // how long it took to perform
}

type resultView struct {
	Ran     int
	Of      int
	Error   string
	Notes   []string
	Elapsed string
}

type shotView struct {
	FrameID string
	Ref     string // "#img3": the <image> in the page's defs
	W, H    int
	URL     string
	Missing string // why there is no picture
	Markers []marker
}

type imageDef struct {
	ID   string
	URI  template.URL // a data: URI of a sniffed PNG or JPEG
	W, H int
}

// marker is one action drawn in a screenshot's image space.
type marker struct {
	N      int
	Kind   string // click, point, drag, scroll, region
	Class  string // colour: left, right or other for a click, else Kind
	X, Y   float64
	R      float64   // circle radius
	Radii  []float64 // click: one ring per click
	X2, Y2 float64   // scroll: the arrow's head; drag: the last point
	RW, RH float64   // region: width and height
	Points string    // drag: the polyline
	LX, LY float64   // the number's position
	Font   float64   // the number's size
	BR     float64   // the number's badge radius
	Stroke float64
	Halo   float64 // the white outline under a stroke
}

type frameInfo struct {
	frame screen.Frame
	shot  string
}

// buildReport turns events into the page's data. load reads a shot file by
// its path relative to the trace.
func buildReport(evs []Event, load func(string) ([]byte, error)) *report {
	b := &reportBuilder{
		r:      &report{},
		frames: indexFrames(evs),
		load:   load,
		cards:  map[int]*card{},
		calls:  map[string]*callView{},
		images: map[string]string{},
	}
	for _, e := range evs {
		b.read(e)
	}
	// Finish each call: its actions, their outcome and their markers.
	for _, c := range b.r.Cards {
		b.finishCard(c)
	}
	b.finishRun()
	return b.r
}

// reportBuilder holds what buildReport gathers from the events, in order.
type reportBuilder struct {
	r      *report
	frames map[string]frameInfo // by frame id
	load   func(string) ([]byte, error)

	start, end, last time.Time
	sawEnd           bool
	latest           string // the newest full screenshot so far
	cards            map[int]*card
	calls            map[string]*callView // by step and call id
	maxStep          int
	images           map[string]string // frame id -> "#imgN"
	startPage        screen.PageLog    // what the start page logged, for the first step
}

// indexFrames returns the frames the events name, by id, each with the
// first shot file saved for it.
func indexFrames(evs []Event) map[string]frameInfo {
	frames := map[string]frameInfo{}
	for _, e := range evs {
		id := e.Frame.ID
		if id == "" && e.Shot != "" {
			id = strings.TrimSuffix(path.Base(e.Shot), path.Ext(e.Shot))
		}
		if id == "" {
			continue
		}
		fi := frames[id]
		if e.Shot != "" && fi.shot == "" {
			fi.shot = e.Shot
			fi.frame = e.Frame
		} else if fi.frame.ID == "" {
			fi.frame = e.Frame
		}
		frames[id] = fi
	}
	return frames
}

// card returns the card of step, adding it in the order steps appear.
func (b *reportBuilder) card(step int) *card {
	c := b.cards[step]
	if c == nil {
		c = &card{Step: step}
		b.cards[step] = c
		b.r.Cards = append(b.r.Cards, c)
	}
	return c
}

// call returns the view of e's call, adding it to its step's card; a new
// call was decided on the newest full screenshot so far.
func (b *reportBuilder) call(e Event) *callView {
	key := fmt.Sprintf("%d\x00%s", e.Step, e.CallID)
	cv := b.calls[key]
	if cv == nil {
		cv = &callView{ID: e.CallID, frameID: b.latest}
		b.calls[key] = cv
		c := b.card(e.Step)
		c.Calls = append(c.Calls, cv)
	}
	return cv
}

// read takes in one event.
func (b *reportBuilder) read(e Event) {
	if b.start.IsZero() {
		b.start = e.Time
	}
	b.last = e.Time
	b.maxStep = max(b.maxStep, e.Step)
	switch e.Type {
	case TypeRunStart:
		b.r.Task, b.r.Model, b.start = e.Task, e.Model, e.Time
		b.startPage = e.Page
	case TypeRunEnd:
		b.runEnd(e)
	case TypeModelTurn:
		b.modelTurn(e)
	case TypeCall:
		cv := b.call(e)
		cv.Name, cv.space, cv.Error = e.Name, e.Space, e.Error
		if e.FrameID != "" && !cv.fromModel {
			cv.frameID = e.FrameID
		}
	case TypeAction:
		cv := b.call(e)
		cv.events = append(cv.events, e)
		if e.FrameID != "" && !cv.fromModel {
			cv.frameID, cv.fromModel = e.FrameID, true
		}
	case TypeResult:
		b.result(e)
	case TypeNote, TypeError:
		b.note(e)
	}
	if !e.Page.Empty() && e.Type != TypeRunStart {
		if e.Step == 0 {
			b.startPage = joinLogs(b.startPage, e.Page)
		} else {
			b.pageLog(b.card(e.Step), e.Page)
		}
	}
	if id := cmp.Or(e.Frame.ID, shotID(e.Shot)); e.Shot != "" && id != "" {
		if f := b.frames[id].frame; f.Clip.Empty() || !f.Zoomed() {
			b.latest = id
		}
	}
	if c := b.cards[e.Step]; c != nil && e.Step > 0 && !e.Time.IsZero() {
		if c.start.IsZero() {
			c.start = e.Time
		}
		c.last = e.Time
	}
}

func (b *reportBuilder) runEnd(e Event) {
	b.sawEnd, b.end = true, e.Time
	b.r.Outcome, b.r.Error = e.Stop, e.Error
	b.r.Steps = e.Step
	if e.Elapsed > 0 {
		b.r.Elapsed = formatDuration(e.Elapsed)
	}
}

func (b *reportBuilder) modelTurn(e Event) {
	c := b.card(e.Step)
	if c.Screen == nil {
		c.Screen = &shotView{FrameID: b.latest} // loaded if the step turns out to have no calls
	}
	c.Text = joinText(c.Text, e.Text)
	c.Stop = cmp.Or(e.Stop, c.Stop)
	c.Usage = addUsage(c.Usage, e.Usage)
	b.r.Usage = addUsage(b.r.Usage, e.Usage)
	if e.Elapsed > 0 {
		c.Elapsed = formatDuration(e.Elapsed)
	}
	if c.Offset == "" && !b.start.IsZero() && !e.Time.IsZero() {
		c.Offset = "+" + formatDuration(e.Time.Sub(b.start))
	}
}

func (b *reportBuilder) result(e Event) {
	cv := b.call(e)
	cv.Result = &resultView{Ran: e.Ran, Error: e.Error, Notes: e.Notes}
	if e.Elapsed > 0 {
		cv.Result.Elapsed = formatDuration(e.Elapsed)
	}
	if id := cmp.Or(e.Frame.ID, shotID(e.Shot)); id != "" {
		cv.After = &shotView{FrameID: id}
	}
}

// note adds a note or an error to its step's card, or to the run's notes
// for step 0.
func (b *reportBuilder) note(e Event) {
	n := note{Text: cmp.Or(e.Text, e.Error), Error: e.Type == TypeError}
	if e.Type == TypeError && e.Text != "" && e.Error != "" {
		n.Text = e.Text + ": " + e.Error
	}
	if e.Step == 0 {
		b.r.Notes = append(b.r.Notes, n)
		return
	}
	c := b.card(e.Step)
	c.Notes = append(c.Notes, n)
}

// image returns the view of frame id's screenshot, adding its picture to
// the page's images the first time, or says why there is none.
func (b *reportBuilder) image(id string) *shotView {
	sv := &shotView{FrameID: id}
	fi, ok := b.frames[id]
	switch {
	case id == "":
		sv.Missing = "no screenshot recorded"
		return sv
	case !ok || fi.shot == "":
		sv.Missing = "screenshot " + id + " was not saved"
		return sv
	}
	sv.URL = fi.frame.URL
	if ref, ok := b.images[id]; ok {
		sv.Ref = ref
		sv.W, sv.H = imageSize(b.r.Images, ref)
		return sv
	}
	def, err := loadImage(fi, b.load)
	if err != nil {
		sv.Missing = fmt.Sprintf("screenshot %s: %v", id, err)
		return sv
	}
	def.ID = fmt.Sprintf("img%d", len(b.r.Images)+1)
	b.r.Images = append(b.r.Images, def)
	sv.Ref = "#" + def.ID
	b.images[id] = sv.Ref
	sv.W, sv.H = def.W, def.H
	return sv
}

// finishCard finishes c's calls and says whether the step failed, what it
// did and whether it is the model's last word.
func (b *reportBuilder) finishCard(c *card) {
	var kinds []string
	for _, cv := range c.Calls {
		kinds = append(kinds, b.finishCall(c, cv)...)
	}
	for _, n := range c.Notes {
		c.Failed = c.Failed || n.Error
	}
	if c.Failed {
		b.r.Errors++
	}
	c.Summary = summarize(kinds)
	c.Final = len(c.Calls) == 0 && c.Stop != "" && c.Stop != "tool_use"
	if c.Summary == "" && c.Final {
		c.Summary = c.Stop
	}
	if len(c.Calls) == 0 && c.Screen != nil && c.Screen.FrameID != "" {
		c.Screen = b.image(c.Screen.FrameID)
	} else {
		c.Screen = nil
	}
}

// pageLog adds what the page logged and requested to c's tabs.
func (b *reportBuilder) pageLog(c *card, l screen.PageLog) {
	for _, m := range l.Console {
		row := consoleRow{At: b.offset(m.Time), Clock: clock(m.Time), Level: m.Level, Src: m.Source, Text: m.Text, Where: m.Where}
		switch m.Level {
		case "error":
			row.Class = "bad"
			c.ConsoleErrors++
		case "warning":
			row.Class = "warn"
		}
		c.Console = append(c.Console, row)
	}
	for _, q := range l.Requests {
		row := requestRow{At: b.offset(q.Time), Clock: clock(q.Time), Method: q.Method, URL: q.URL, Type: q.Type, Error: q.Error}
		switch {
		case q.Status > 0 && q.Pending:
			row.Status = fmt.Sprint(q.Status)
			row.Error = joinText(row.Error, "its body had not all arrived, or the page had not read it, at the screenshot")
		case q.Pending:
			row.Status = "pending"
		case q.Status == 0:
			row.Status = "failed"
		default:
			row.Status = fmt.Sprint(q.Status)
		}
		if q.Error != "" || q.Status >= 400 || (q.Status == 0 && !q.Pending) {
			row.Class = "bad"
			c.FailedReqs++
		}
		if q.Duration > 0 {
			row.Duration = formatDuration(q.Duration)
		}
		c.Requests = append(c.Requests, row)
	}
	var dropped []string
	if l.DroppedConsole > 0 {
		dropped = append(dropped, fmt.Sprintf("%d older console messages", l.DroppedConsole))
	}
	if l.DroppedRequests > 0 {
		dropped = append(dropped, fmt.Sprintf("%d older requests", l.DroppedRequests))
	}
	if len(dropped) > 0 {
		c.Dropped = joinText(c.Dropped, "The display kept the latest only: "+strings.Join(dropped, " and ")+" were let go.")
	}
}

// joinLogs appends b's entries to a's.
func joinLogs(a, b screen.PageLog) screen.PageLog {
	a.Console = append(a.Console, b.Console...)
	a.Requests = append(a.Requests, b.Requests...)
	a.DroppedConsole += b.DroppedConsole
	a.DroppedRequests += b.DroppedRequests
	return a
}

// offset is t since the run started, as the report shows it.
func (b *reportBuilder) offset(t time.Time) string {
	if b.start.IsZero() || t.IsZero() {
		return ""
	}
	return "+" + formatDuration(t.Sub(b.start))
}

// clock is t on the wall clock, to the millisecond.
func clock(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("15:04:05.000")
}

// finishCall makes cv's action rows and markers, loads its screenshots,
// marks c failed if anything in cv failed, and returns its action kinds.
func (b *reportBuilder) finishCall(c *card, cv *callView) []string {
	b.r.Calls++
	if cv.space != screen.Image {
		cv.Space = cv.space.String()
	}
	ran := -1
	if cv.Result != nil {
		ran = cv.Result.Ran
		cv.Result.Of = len(cv.events)
	}
	cv.Before = b.image(cv.frameID)
	before := b.frames[cv.frameID].frame
	var kinds []string
	for _, e := range cv.events {
		b.r.Actions++
		av := actionRow(e, ran)
		kinds = append(kinds, av.Kind)
		if av.Class == "bad" {
			c.Failed = true
		}
		if av.Status == "refused" {
			c.Refused = true
		}
		if cv.Before.Ref != "" {
			g := geometry{frame: before, space: cv.space, w: cv.Before.W, h: cv.Before.H}
			if m, ok := g.marker(av.N, e.Action, e.Mapped); ok {
				cv.Before.Markers = append(cv.Before.Markers, m)
				av.Mark = m.Class
			}
		}
		cv.Actions = append(cv.Actions, av)
	}
	if cv.After != nil {
		cv.After = b.image(cv.After.FrameID)
	}
	if cv.Error != "" || (cv.Result != nil && cv.Result.Error != "") {
		c.Failed = true
	}
	return kinds
}

// finishRun fills in the run's step count, times, outcome and timeline.
func (b *reportBuilder) finishRun() {
	r := b.r
	if r.Steps == 0 {
		r.Steps = b.maxStep
	}
	if !b.sawEnd {
		b.end = b.last
	}
	if r.Elapsed == "" && !b.start.IsZero() && !b.end.IsZero() {
		r.Elapsed = formatDuration(b.end.Sub(b.start))
	}
	if !b.start.IsZero() {
		r.Started = b.start.Format("2006-01-02 15:04:05 MST")
	}
	r.Outcome, r.Class = outcomeClass(b.sawEnd, r.Outcome, r.Error)
	if !b.sawEnd {
		r.Warnings = append(r.Warnings, "The trace has no run_end event: the run was still going or crashed.")
	}
	r.Verdict = verdict(r.Outcome)
	r.Notes, r.Egress = foldEgress(r.Notes)
	if len(r.Cards) > 0 && !b.startPage.Empty() {
		first := r.Cards[0]
		console, requests, errs, failed := first.Console, first.Requests, first.ConsoleErrors, first.FailedReqs
		first.Console, first.Requests, first.ConsoleErrors, first.FailedReqs = nil, nil, 0, 0
		b.pageLog(first, b.startPage)
		first.Console, first.Requests = append(first.Console, console...), append(first.Requests, requests...)
		first.ConsoleErrors += errs
		first.FailedReqs += failed
	}
	r.timeline(b.end)
}

// outcomeClass returns a run's outcome as the page shows it ("incomplete"
// without a run_end event, "unknown" without a stop reason) and its colour
// class: ok, warn or bad.
func outcomeClass(sawEnd bool, stop, err string) (outcome, class string) {
	switch {
	case !sawEnd:
		return "incomplete", "bad"
	case stop == "end_turn" && err == "":
		class = "ok"
	case stop == "error" || err != "":
		class = "bad"
	default:
		class = "warn"
	}
	return cmp.Or(stop, "unknown"), class
}

// verdict says what a run's stop reason means.
func verdict(stop string) string {
	switch stop {
	case "end_turn":
		return "Completed"
	case "max_steps":
		return "Step limit reached"
	case "repeat":
		return "Stopped: the model kept repeating itself"
	case "max_tokens":
		return "Stopped: the model's reply was cut off"
	case "refusal":
		return "The model refused"
	case "pause_turn":
		return "Paused"
	case "error":
		return "Failed"
	case "incomplete":
		return "Incomplete"
	}
	return "Stopped: " + stop
}

func shotID(rel string) string {
	if rel == "" {
		return ""
	}
	return strings.TrimSuffix(path.Base(rel), path.Ext(rel))
}

func imageSize(defs []imageDef, ref string) (int, int) {
	for _, d := range defs {
		if "#"+d.ID == ref {
			return d.W, d.H
		}
	}
	return 0, 0
}

// loadImage reads a screenshot and makes it a data URI. Only PNG and JPEG
// data, recognized by signature, is inlined. The image is drawn in the
// Frame's Sent space, the space the model saw; without a Frame, in the
// image's own size.
func loadImage(fi frameInfo, load func(string) ([]byte, error)) (imageDef, error) {
	data, err := load(fi.shot)
	if err != nil {
		return imageDef{}, err
	}
	mime := http.DetectContentType(data)
	if mime != "image/png" && mime != "image/jpeg" {
		return imageDef{}, fmt.Errorf("%s is %s, not a PNG or JPEG image", fi.shot, mime)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return imageDef{}, fmt.Errorf("%s: %v", fi.shot, err)
	}
	w, h := cfg.Width, cfg.Height
	if !fi.frame.Sent.Empty() {
		w, h = fi.frame.Sent.W, fi.frame.Sent.H
	}
	if w <= 0 || h <= 0 {
		return imageDef{}, fmt.Errorf("%s has no pixels", fi.shot)
	}
	uri := "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
	return imageDef{URI: template.URL(uri), W: w, H: h}, nil
}

func actionRow(e Event, ran int) actionView {
	a := e.Action
	kind := a.Kind
	if kind == actions.KindInvalid {
		kind = e.Mapped.Kind
	}
	av := actionView{
		N:       e.Index + 1,
		Kind:    kind.String(),
		Model:   where(a),
		Detail:  detail(a, e.Secret),
		Error:   e.Error,
		Stale:   e.Stale,
		FrameID: e.FrameID,
	}
	if e.Elapsed > 0 {
		av.Elapsed = formatDuration(e.Elapsed)
	}
	if e.Mapped.Kind != actions.KindInvalid {
		av.CSS = where(e.Mapped.Action)
	}
	switch {
	case e.Error != "" && e.Mapped.Kind == actions.KindInvalid:
		av.Status, av.Class = "refused", "bad"
	case e.Error != "":
		av.Status, av.Class = "failed", "bad"
	case ran < 0:
		av.Status, av.Class = "no result", "muted"
	case e.Index < ran:
		av.Status, av.Class = "ran", "ok"
	default:
		av.Status, av.Class = "not run", "muted"
	}
	return av
}

// where shows an action's coordinates.
func where(a actions.Action) string {
	switch {
	case a.Kind == actions.Drag:
		ps := make([]string, len(a.Path))
		for i, p := range a.Path {
			ps[i] = formatPoint(p)
		}
		return strings.Join(ps, " → ")
	case a.Kind == actions.Zoom:
		return formatPoint(a.Region.Min) + " – " + formatPoint(a.Region.Max)
	case hasPoint(a):
		return formatPoint(a.At)
	case a.Kind.IsPointer():
		return "at cursor"
	}
	return ""
}

func hasPoint(a actions.Action) bool {
	return a.Kind.IsPointer() && a.Kind != actions.Drag && (a.HasAt || a.At != actions.Point{})
}

// detail shows what an action does besides where.
func detail(a actions.Action, secret bool) string {
	var d []string
	if a.Kind.IsPointer() && a.Button != actions.Left {
		d = append(d, a.Button.String()+" button")
	}
	if len(a.Modifiers) > 0 {
		d = append(d, "holding "+a.Modifiers.String())
	}
	if len(a.Keys) > 0 {
		d = append(d, "keys "+a.Keys.String())
	}
	if t := actionText(a, secret); t != "" {
		d = append(d, t)
	}
	if a.DeltaX != 0 || a.DeltaY != 0 {
		d = append(d, fmt.Sprintf("by (%s, %s)", formatNum(a.DeltaX), formatNum(a.DeltaY)))
	}
	if a.Duration != 0 {
		d = append(d, a.Duration.String())
	}
	if a.URL != "" {
		d = append(d, a.URL)
	}
	return strings.Join(d, " · ")
}

// maxShownText bounds how much typed text a report shows.
const maxShownText = 200

// actionText is the one place where a report shows what an action typed. A
// secret shows only its length.
func actionText(a actions.Action, secret bool) string {
	if a.Text == "" {
		return ""
	}
	n := utf8.RuneCountInString(a.Text)
	if secret {
		return fmt.Sprintf("secret text, %d chars", n)
	}
	t := a.Text
	if n > maxShownText {
		t = string([]rune(t)[:maxShownText]) + "…"
	}
	return fmt.Sprintf("%q, %d chars", t, n)
}

func summarize(kinds []string) string {
	var out []string
	for i, k := range kinds {
		if i > 0 && k == kinds[i-1] {
			continue
		}
		out = append(out, k)
	}
	if len(out) > 3 {
		out = append(out[:3], "…")
	}
	return strings.Join(out, ", ")
}

func joinText(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n\n" + b
}

func addUsage(a, b Usage) Usage {
	return Usage{
		InputTokens:  a.InputTokens + b.InputTokens,
		OutputTokens: a.OutputTokens + b.OutputTokens,
		CachedTokens: a.CachedTokens + b.CachedTokens,
		CostUSD:      a.CostUSD + b.CostUSD,
	}
}

func formatPoint(p actions.Point) string {
	return "(" + formatNum(p.X) + ", " + formatNum(p.Y) + ")"
}

// formatNum shows v with at most one decimal.
func formatNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}

func formatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + formatDuration(-d)
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// geometry converts an action's model coordinates to the image space of the
// screenshot the model saw.
type geometry struct {
	frame screen.Frame // may be zero: then image space is the model's
	space screen.Space
	w, h  int // the image's size in image space
}

// point converts a model point to image space with the same mapping the
// loop used (screen.Frame.ToImage), so a marker sits where the action was
// performed. Without a usable frame, a grid is spread over the image and a
// resized space is scaled.
func (g geometry) point(p actions.Point) actions.Point {
	if !g.frame.Sent.Empty() {
		if q, err := g.frame.ToImage(p, g.space); err == nil {
			return q
		}
	}
	sx, sy := g.scale()
	return actions.Point{X: p.X * sx, Y: p.Y * sy}
}

func (g geometry) scale() (float64, float64) {
	w, h := float64(g.w), float64(g.h)
	switch g.space.Kind {
	case screen.GridSpace:
		if g.space.Grid > 0 {
			return w / float64(g.space.Grid), h / float64(g.space.Grid)
		}
	case screen.ResizedSpace:
		if !g.space.Resized.Empty() {
			return w / float64(g.space.Resized.W), h / float64(g.space.Resized.H)
		}
	}
	return 1, 1
}

// cssPoint converts a mapped CSS point back to image space through the
// frame's clip, for actions that have no model coordinates on record.
func (g geometry) cssPoint(p actions.Point) (actions.Point, bool) {
	c := g.frame.Clip
	if c.Empty() {
		return actions.Point{}, false
	}
	return actions.Point{
		X: (p.X - c.Min.X) * float64(g.w) / c.Dx(),
		Y: (p.Y - c.Min.Y) * float64(g.h) / c.Dy(),
	}, true
}

// marker returns how to draw action number n. It uses the model's own
// coordinates, which are where the model aimed in the image it saw, and
// falls back to the mapped CSS coordinates when the model's are not on
// record. ok is false for an action that has no place on the screen.
func (g geometry) marker(n int, a actions.Action, m screen.Mapped) (marker, bool) {
	conv := func(p actions.Point) (actions.Point, bool) { return g.point(p), true }
	sx, sy := g.scale()
	if a.Kind == actions.KindInvalid {
		a = m.Action
		conv = g.cssPoint
		if c := g.frame.Clip; !c.Empty() {
			sx, sy = float64(g.w)/c.Dx(), float64(g.h)/c.Dy()
		}
	}
	w := float64(max(g.w, g.h))
	mk := marker{N: n, R: w / 36, Font: w / 44, BR: w / 52, Stroke: w / 220, Halo: w / 110, Class: "left"}
	switch a.Button {
	case actions.Left:
	case actions.Right:
		mk.Class = "right"
	default:
		mk.Class = "other"
	}
	at := func(p actions.Point) bool {
		q, ok := conv(p)
		mk.X, mk.Y = q.X, q.Y
		mk.label(mk.R)
		return ok
	}
	switch a.Kind {
	case actions.Click, actions.DoubleClick, actions.TripleClick:
		if !hasPoint(a) || !at(a.At) {
			return marker{}, false
		}
		mk.Kind = "click"
		rings := map[actions.Kind]int{actions.Click: 1, actions.DoubleClick: 2, actions.TripleClick: 3}[a.Kind]
		for i := range rings {
			mk.Radii = append(mk.Radii, mk.R*(1+0.4*float64(i)))
		}
		mk.label(mk.Radii[len(mk.Radii)-1])
	case actions.Move, actions.MouseDown, actions.MouseUp:
		if !hasPoint(a) || !at(a.At) {
			return marker{}, false
		}
		mk.Kind = "point"
	case actions.Scroll:
		if !at(a.At) {
			return marker{}, false
		}
		mk.Kind = "scroll"
		dx, dy := a.DeltaX*sx, a.DeltaY*sy
		l := math.Hypot(dx, dy)
		if l == 0 || math.IsNaN(l) || math.IsInf(l, 0) {
			mk.Kind = "point"
			break
		}
		// The arrow shows the direction; its length grows with the
		// distance but stays readable.
		size := math.Min(math.Max(l, w/16), w/6)
		mk.X2, mk.Y2 = mk.X+dx/l*size, mk.Y+dy/l*size
	case actions.Drag:
		if len(a.Path) < 2 {
			return marker{}, false
		}
		pts := make([]string, len(a.Path))
		for i, q := range a.Path {
			p, ok := conv(q)
			if !ok {
				return marker{}, false
			}
			pts[i] = formatNum(p.X) + "," + formatNum(p.Y)
			mk.X2, mk.Y2 = p.X, p.Y
		}
		at(a.Path[0])
		mk.Kind, mk.Points = "drag", strings.Join(pts, " ")
	case actions.Zoom:
		p, ok := conv(a.Region.Min)
		q, ok2 := conv(a.Region.Max)
		if !ok || !ok2 {
			return marker{}, false
		}
		mk.Kind = "region"
		mk.X, mk.Y, mk.RW, mk.RH = p.X, p.Y, q.X-p.X, q.Y-p.Y
		mk.LX, mk.LY = p.X, p.Y
	default:
		return marker{}, false
	}
	if mk.Kind != "click" {
		mk.Class = mk.Kind
	}
	return mk, true
}

// label puts the marker's number in a badge just off a circle of radius r
// around its point, up and to the right.
func (m *marker) label(r float64) {
	d := (r + m.BR) * math.Sqrt2 / 2
	m.LX, m.LY = m.X+d, m.Y-d
}
