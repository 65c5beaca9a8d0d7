package cdp

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"

	"github.com/spotter-harness/spotter/screen"
)

// pageState is what a display knows about its page from protocol events.
// The tab's event loop updates it through onEvent, which must return fast
// and send no command; Capture and Perform read it. All fields are guarded
// by mu.
type pageState struct {
	mu sync.Mutex

	// changed receives a value (without blocking the sender) whenever
	// something that settling depends on changes.
	changed chan struct{}
	// ackWake receives a value when screencast frames wait for an ack.
	ackWake chan struct{}

	mainFrame cdp.FrameID
	url       string
	loading   map[cdp.FrameID]bool
	requests  map[network.RequestID]request
	// remote are the frames of the page that run in another process
	// (cross-site iframes), by the session of their target: their
	// requests finish where this session does not see it.
	remote map[target.SessionID]cdp.FrameID
	// timers are the counts of short timers pending in the page's
	// documents (see timers.go), by execution context; contexts maps
	// the contexts' unique ids to their ids.
	timers   map[runtime.ExecutionContextID]timerCount
	contexts map[string]runtime.ExecutionContextID

	frames       int64     // screencast frames seen outside captures
	lastFrame    time.Time // when the last of them arrived
	lastActivity time.Time // last navigation, network change or input fence
	inputs       int64     // input actions performed
	capturing    bool      // a capture is running: its own frame is not activity
	capFrames    int       // frames that arrived during the running capture
	skipFrame    bool      // the next frame is the input's own redraw, not activity
	pendingAcks  []int64
	// echoUntil is set when a capture ended with no frame arriving
	// during it: its own frame may still come, and the first frame
	// before echoUntil is taken for it. An input clears it.
	echoUntil time.Time

	crashed bool
	dialog  *screen.Dialog // the JavaScript dialog that blocks the page, if any
	// dialogSeen counts dialogs that opened; a Perform compares it to tell
	// whether its action opened one.
	dialogSeen int
	opened     []target.Info // page targets created since the last takeOpened, of any opener
	chooser    *page.EventFileChooserOpened
	drag       *input.DragData // a drag the page started, intercepted (Input.dragIntercepted)
	frameIDs   map[cdp.FrameID]bool
	// dialogCtx is canceled when a dialog opens, and replaced when it
	// closes: commands to the page stop waiting for an answer then.
	dialogCtx    context.Context
	dialogCancel context.CancelFunc
	// dialogs follows the dialogs of all the display's tabs; nil in unit
	// tests.
	dialogs *dialogWatch
	events  []string
}

// request is a network request in flight.
type request struct {
	url   string
	start time.Time
	frame cdp.FrameID
	typ   network.ResourceType
	// The response, once it arrived: the body's bytes received so far,
	// the bytes its Content-Length announced (-1: unknown), and when the
	// last of them came.
	response bool
	got      int64
	want     int64
	lastData time.Time
}

// bodyIdle is how long the body of a fetch() response, whose length is
// unknown, may receive nothing before settling stops waiting for it.
// Chromium reports a fetch() finished only once the page has read its
// body, which a page need not ever do.
const bodyIdle = 100 * time.Millisecond

// bodyRead reports whether settling has no more to wait for from r at
// now, though its loading has not finished: a fetch() response whose body
// has arrived, or has received nothing for bodyIdle; and when that may
// change without an event.
func (r request) bodyRead(now time.Time) (bool, time.Time) {
	if !r.response || r.typ != network.ResourceTypeFetch {
		return false, time.Time{}
	}
	if r.want >= 0 && r.got >= r.want {
		return true, time.Time{}
	}
	idle := r.lastData.Add(bodyIdle)
	return !now.Before(idle), idle
}

// timerCount is the count of short timers pending in one document, and
// since when it has been above zero.
type timerCount struct {
	n     int
	since time.Time
}

func newPageState(now time.Time) *pageState {
	dctx, dcancel := context.WithCancel(context.Background())
	return &pageState{
		dialogCtx:    dctx,
		dialogCancel: dcancel,
		changed:      make(chan struct{}, 1),
		ackWake:      make(chan struct{}, 1),
		url:          "about:blank",
		loading:      make(map[cdp.FrameID]bool),
		frameIDs:     make(map[cdp.FrameID]bool),
		requests:     make(map[network.RequestID]request),
		remote:       make(map[target.SessionID]cdp.FrameID),
		timers:       make(map[runtime.ExecutionContextID]timerCount),
		contexts:     make(map[string]runtime.ExecutionContextID),
		lastActivity: now,
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// onEvent records one protocol event of the tab. It runs on chromedp's
// event loop.
func (s *pageState) onEvent(ev any) {
	s.event(time.Now(), ev)
}

func (s *pageState) event(now time.Time, ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var changed bool
	switch ev := ev.(type) {
	case *page.EventScreencastFrame:
		changed = s.onScreencastFrame(now, ev)
	case *page.EventFrameStartedLoading, *page.EventFrameStoppedLoading, *page.EventFrameDetached,
		*page.EventFrameNavigated, *page.EventFrameAttached, *page.EventNavigatedWithinDocument:
		changed = s.onFrameEvent(now, ev)
	case *network.EventRequestWillBeSent, *network.EventResponseReceived, *network.EventDataReceived,
		*network.EventLoadingFinished, *network.EventLoadingFailed:
		changed = s.onNetworkEvent(now, ev)
	case *target.EventAttachedToTarget, *target.EventDetachedFromTarget, *target.EventTargetCreated:
		changed = s.onTargetEvent(now, ev)
	case *runtime.EventBindingCalled, *runtime.EventExecutionContextCreated,
		*runtime.EventExecutionContextDestroyed, *runtime.EventExecutionContextsCleared:
		changed = s.onRuntimeEvent(now, ev)
	default:
		changed = s.onPageEvent(ev)
	}
	if changed {
		poke(s.changed)
	}
}

// onScreencastFrame records a screencast frame: a frame drawn, unless a
// capture or the input's own redraw drew it. It reports whether settling
// must look again, as the other on* steps do.
func (s *pageState) onScreencastFrame(now time.Time, ev *page.EventScreencastFrame) bool {
	s.pendingAcks = append(s.pendingAcks, ev.SessionID)
	poke(s.ackWake)
	if s.capturing {
		s.capFrames++
		return false
	}
	if echo := s.echoUntil; !echo.IsZero() {
		s.echoUntil = time.Time{}
		if now.Before(echo) {
			return false
		}
	}
	if s.skipFrame {
		s.skipFrame = false
		return false
	}
	s.frames++
	s.lastFrame = now
	return true
}

// onFrameEvent records a frame of the page loading, navigating, attaching
// or detaching.
func (s *pageState) onFrameEvent(now time.Time, ev any) bool {
	switch ev := ev.(type) {
	case *page.EventFrameStartedLoading:
		s.loading[ev.FrameID] = true
		s.lastActivity = now
	case *page.EventFrameStoppedLoading:
		delete(s.loading, ev.FrameID)
		s.lastActivity = now
	case *page.EventFrameDetached:
		delete(s.loading, ev.FrameID)
	case *page.EventFrameNavigated:
		if ev.Frame == nil {
			break
		}
		s.frameIDs[ev.Frame.ID] = true
		if ev.Frame.ParentID == "" {
			s.mainFrame = ev.Frame.ID
			s.url = ev.Frame.URL + ev.Frame.URLFragment
			s.chooser = nil
		}
	case *page.EventFrameAttached:
		s.frameIDs[ev.FrameID] = true
	case *page.EventNavigatedWithinDocument:
		if ev.FrameID == s.mainFrame {
			s.url = ev.URL
		}
	}
	return true
}

// onNetworkEvent tracks the requests in flight.
func (s *pageState) onNetworkEvent(now time.Time, ev any) bool {
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Request == nil || ignoredRequest(ev.Type, ev.Request.URL) || s.isRemote(ev.FrameID) {
			return false
		}
		r, ok := s.requests[ev.RequestID]
		if !ok {
			r.start = now
		}
		r.url = ev.Request.URL // a redirect keeps its start
		r.frame, r.typ, r.response = ev.FrameID, ev.Type, false
		s.requests[ev.RequestID] = r
		s.lastActivity = now
	case *network.EventResponseReceived:
		r, ok := s.requests[ev.RequestID]
		if !ok || ev.Response == nil {
			return false
		}
		r.response, r.got, r.want, r.lastData = true, 0, contentLength(ev.Response.Headers), now
		s.requests[ev.RequestID] = r
		s.lastActivity = now
	case *network.EventDataReceived:
		r, ok := s.requests[ev.RequestID]
		if !ok {
			return false
		}
		r.got += ev.DataLength
		r.lastData = now
		s.requests[ev.RequestID] = r
		if done, _ := r.bodyRead(now); done {
			s.finish(now, ev.RequestID)
		}
	case *network.EventLoadingFinished:
		s.finish(now, ev.RequestID)
	case *network.EventLoadingFailed:
		s.finish(now, ev.RequestID)
	}
	return true
}

// onTargetEvent follows cross-site iframes that move to a process of
// their own, and records the page targets that open.
func (s *pageState) onTargetEvent(now time.Time, ev any) bool {
	switch ev := ev.(type) {
	case *target.EventAttachedToTarget:
		// A cross-site iframe moved to a process of its own: what it
		// loads from now on is reported to its own session.
		if i := ev.TargetInfo; i != nil && i.Type == "iframe" {
			f := cdp.FrameID(i.TargetID)
			s.remote[ev.SessionID] = f
			for id, r := range s.requests {
				if r.frame == f {
					delete(s.requests, id)
				}
			}
			delete(s.loading, f)
			s.lastActivity = now
		}
		return true
	case *target.EventDetachedFromTarget:
		delete(s.remote, ev.SessionID)
	case *target.EventTargetCreated:
		if ev.TargetInfo != nil && ev.TargetInfo.Type == "page" && ev.TargetInfo.OpenerID != "" {
			s.opened = append(s.opened, *ev.TargetInfo)
		}
	}
	return false
}

// onRuntimeEvent tracks the short-timer counts of the page's documents
// (timers.go) and the execution contexts they belong to.
func (s *pageState) onRuntimeEvent(now time.Time, ev any) bool {
	switch ev := ev.(type) {
	case *runtime.EventBindingCalled:
		return s.onTimerCount(now, ev)
	case *runtime.EventExecutionContextCreated:
		if ev.Context != nil {
			s.contexts[ev.Context.UniqueID] = ev.Context.ID
		}
		return false
	case *runtime.EventExecutionContextDestroyed:
		if id, ok := s.contexts[ev.ExecutionContextUniqueID]; ok {
			delete(s.contexts, ev.ExecutionContextUniqueID)
			delete(s.timers, id)
		}
	case *runtime.EventExecutionContextsCleared:
		clear(s.contexts)
		clear(s.timers)
	}
	return true
}

// onTimerCount records a document's count of short timers.
func (s *pageState) onTimerCount(now time.Time, ev *runtime.EventBindingCalled) bool {
	if ev.Name != timerBinding {
		return false
	}
	n, err := strconv.Atoi(ev.Payload)
	if err != nil || n < 0 {
		return false
	}
	c := s.timers[ev.ExecutionContextID]
	switch {
	case n == 0:
		delete(s.timers, ev.ExecutionContextID)
		s.lastActivity = now
	case c.n == 0:
		s.timers[ev.ExecutionContextID] = timerCount{n: n, since: now}
	default:
		c.n = n
		s.timers[ev.ExecutionContextID] = c
	}
	return true
}

// onPageEvent records dialogs, file choosers, drags and crashes.
func (s *pageState) onPageEvent(ev any) bool {
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		s.dialog = &screen.Dialog{Type: string(ev.Type), Message: ev.Message, DefaultPrompt: ev.DefaultPrompt, URL: ev.URL}
		s.dialogSeen++
		s.dialogCancel()
		if s.dialogs != nil {
			s.dialogs.opened()
		}
	case *page.EventJavascriptDialogClosed:
		if s.dialog != nil && s.dialogs != nil {
			s.dialogs.closed()
		}
		s.dialog = nil
		s.dialogCancel()
		s.dialogCtx, s.dialogCancel = context.WithCancel(context.Background())
	case *page.EventFileChooserOpened:
		c := *ev
		s.chooser = &c
		s.events = append(s.events, screen.ChooserNote(ev.Mode == page.FileChooserOpenedModeSelectMultiple))
	case *input.EventDragIntercepted:
		s.drag = ev.Data
	case *inspector.EventTargetCrashed:
		s.crashed = true
		s.events = append(s.events, "the page crashed")
	default:
		return false
	}
	return true
}

// isRemote reports whether the frame f runs in another process.
func (s *pageState) isRemote(f cdp.FrameID) bool {
	if f == "" {
		return false
	}
	for _, r := range s.remote {
		if r == f {
			return true
		}
	}
	return false
}

// contentLength returns the Content-Length of a response's headers, or -1.
func contentLength(h network.Headers) int64 {
	for k, v := range h {
		if !strings.EqualFold(k, "Content-Length") {
			continue
		}
		if s, ok := v.(string); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n >= 0 {
				return n
			}
		}
	}
	return -1
}

func (s *pageState) finish(now time.Time, id network.RequestID) {
	if _, ok := s.requests[id]; ok {
		delete(s.requests, id)
		s.lastActivity = now
	}
}

// ignoredRequest reports whether a request is one that settling never
// waits for: long-lived streams and URLs that load no network resource.
func ignoredRequest(typ network.ResourceType, url string) bool {
	switch typ {
	case network.ResourceTypeEventSource, network.ResourceTypeWebSocket:
		return true
	}
	return strings.HasPrefix(url, "data:")
}

// markInput records that input was delivered to the page. Settling then
// first waits for a frame fence (see Display.frameFence).
func (s *pageState) markInput() {
	s.mu.Lock()
	s.inputs++
	s.echoUntil = time.Time{}
	s.mu.Unlock()
}

// markFenced records that the page began a frame after the last input, at
// now. The frames drawn in answer to the input until then, and the next
// one, are the input's own redraw, which the capture shows anyway: they are
// not activity to wait out. A page that keeps drawing after that is, so the
// quiet window starts at now.
func (s *pageState) markFenced(now time.Time) {
	s.mu.Lock()
	s.lastFrame = time.Time{}
	s.skipFrame = true
	if now.After(s.lastActivity) {
		s.lastActivity = now
	}
	s.mu.Unlock()
}

func (s *pageState) inputCount() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inputs
}

// setCapturing brackets a capture: the frame the capture itself causes is
// not page activity. Chromium sends that frame's screencast event after
// the capture's answer now and then (0.1-11 ms after it, measured): when
// no frame came during the capture, the first one within captureEcho
// after it, and before any input, is taken for the capture's own. A
// change of the page that draws more than that one frame is still seen;
// one that draws that frame only is finished, and the next capture,
// which encodes the page anew, shows it.
func (s *pageState) setCapturing(on bool) {
	s.mu.Lock()
	s.capturing = on
	s.skipFrame = false
	s.echoUntil = time.Time{}
	if on {
		s.capFrames = 0
	} else if s.capFrames == 0 {
		s.echoUntil = time.Now().Add(captureEcho)
	}
	s.mu.Unlock()
}

// captureEcho bounds how late a capture's own screencast frame is
// expected (setCapturing).
const captureEcho = 50 * time.Millisecond

// takeAcks returns the screencast frames waiting for an ack.
func (s *pageState) takeAcks() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.pendingAcks
	s.pendingAcks = nil
	return a
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

func (s *pageState) currentURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

func (s *pageState) isCrashed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crashed
}

// takeOpened returns the next page target created since the last call.
// Every tab's session reports every page target of the browser; the
// display keeps those that its own tabs opened.
func (s *pageState) takeOpened() (target.Info, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.opened) == 0 {
		return target.Info{}, false
	}
	i := s.opened[0]
	s.opened = s.opened[1:]
	return i, true
}

// setMain records the main frame and URL of a page the display attached to
// after it opened, whose navigation events it may have missed.
func (s *pageState) setMain(id cdp.FrameID, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mainFrame == "" {
		s.mainFrame, s.url = id, url
		s.frameIDs[id] = true
	}
}

// hasFrame reports whether the page has, or had, a frame of that id.
func (s *pageState) hasFrame(id cdp.FrameID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frameIDs[id]
}

// fileChooser returns the open file chooser, if any.
func (s *pageState) fileChooser() *page.EventFileChooserOpened {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chooser
}

func (s *pageState) clearChooser() {
	s.mu.Lock()
	s.chooser = nil
	s.mu.Unlock()
}

// takeDrag returns and forgets the intercepted drag, if any.
func (s *pageState) takeDrag() *input.DragData {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.drag
	s.drag = nil
	return d
}

// currentDialog returns the open JavaScript dialog, if any, and how many
// dialogs have opened so far.
func (s *pageState) currentDialog() (screen.Dialog, bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dialog == nil {
		return screen.Dialog{}, false, s.dialogSeen
	}
	return *s.dialog, true, s.dialogSeen
}

// dialogOpened returns a context that is canceled while a JavaScript
// dialog is open.
func (s *pageState) dialogOpened() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dialogCtx
}

// openDialog describes the JavaScript dialog that blocks the page, or "".
func (s *pageState) openDialog() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dialog == nil {
		return ""
	}
	return s.dialog.String()
}

func (s *pageState) frameCount() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames
}

// quietness is the answer of status.
type quietness struct {
	quiet  bool
	wake   time.Time // when the answer may change without an event; zero: only on an event
	reason string    // what is busy, in words for the model
}

// maxTracked is how long a request that never finishes is remembered.
const maxTracked = 10 * time.Minute

// status says whether the page is quiet at now: no frame loading, no
// request younger than maxAge in flight, and no new frame, navigation,
// network change or input within the last quiet.
func (s *pageState) status(now time.Time, quiet, maxAge time.Duration) quietness {
	s.mu.Lock()
	defer s.mu.Unlock()
	var q quietness
	var pending []request
	earlier := func(w time.Time) {
		if !w.IsZero() && (q.wake.IsZero() || w.Before(q.wake)) {
			q.wake = w
		}
	}
	var read time.Time // when the last body that settling stopped waiting for arrived
	for id, r := range s.requests {
		age := now.Sub(r.start)
		if age > maxTracked {
			delete(s.requests, id)
			continue
		}
		done, idle := r.bodyRead(now)
		switch {
		case done:
			if r.lastData.After(read) {
				read = r.lastData
			}
		case age <= maxAge:
			earlier(idle)
			pending = append(pending, r)
			earlier(r.start.Add(maxAge))
		}
	}
	if len(pending) > 0 {
		q.reason = pendingReason(pending)
		return q
	}
	timers := 0
	for _, c := range s.timers {
		if end := c.since.Add(min(maxTimerWait, maxAge)); now.Before(end) {
			timers += c.n
			earlier(end)
		}
	}
	if timers > 0 {
		q.reason = fmt.Sprintf("%d timer(s) that the page set after the input still pending", timers)
		return q
	}
	if n := len(s.loading); n > 0 {
		q.reason = "the page is still loading"
		if !s.loading[s.mainFrame] {
			q.reason = fmt.Sprintf("%d frame(s) of the page still loading", n)
		}
		return q
	}
	last := s.lastActivity
	if read.After(last) {
		last = read
	}
	if s.lastFrame.After(last) {
		last = s.lastFrame
	}
	if w := last.Add(quiet); now.Before(w) {
		q.wake = w
		q.reason = "the page kept changing"
		if last.Equal(s.lastFrame) {
			q.reason = "the page kept drawing new frames (an animation?)"
		}
		return q
	}
	q.quiet = true
	return q
}

// pendingReason describes requests in flight, oldest first.
func pendingReason(rs []request) string {
	slices.SortFunc(rs, func(a, b request) int { return a.start.Compare(b.start) })
	const show = 3
	urls := make([]string, 0, show)
	for i, r := range rs {
		if i == show {
			urls = append(urls, "…")
			break
		}
		u := r.url
		if len(u) > 120 {
			n := 119
			for n > 0 && !utf8.RuneStart(u[n]) {
				n--
			}
			u = u[:n] + "…"
		}
		urls = append(urls, u)
	}
	noun := "requests"
	if len(rs) == 1 {
		noun = "request"
	}
	return fmt.Sprintf("%d network %s still pending: %s", len(rs), noun, strings.Join(urls, ", "))
}
