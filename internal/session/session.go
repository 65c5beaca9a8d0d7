// Package session runs the sessions of `spotter serve`: each session owns a
// display, a model and a goroutine running the harness loop, and turns what
// the loop does into the events of the session protocol (docs/API.md). It
// stores every event before anyone sees it, keeps the state needed to
// resume a session after the process dies, holds approvals until a human
// decides them, and lets an operator take over the display.
//
// A Manager owns every session and every goroutine they start; Close stops
// them. Decisions on approvals reach a session only through Decide and Post,
// which the HTTP layer calls for authenticated people: nothing the model or
// an application-side tool returns can decide an approval.
package session

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/store"
)

// Errors a client may see.
var (
	// ErrNotFound is an unknown session or approval.
	ErrNotFound = errors.New("not found")
	// ErrConflict says the session is not waiting for what was sent.
	ErrConflict = errors.New("conflict")
	// ErrStopped marks a session a person stopped.
	ErrStopped = errors.New("session stopped")
	// ErrTooManySessions refuses a session past Config.MaxSessions: the
	// server answers 503 with Retry-After.
	ErrTooManySessions = errors.New("too many sessions")
	// ErrTooManyCalls refuses an executor call while the session already
	// holds MaxQueuedCalls: the server answers 429 with Retry-After.
	ErrTooManyCalls = errors.New("too many calls")
	// ErrGone answers for an executor call whose result the session no
	// longer keeps (older than its last MaxRetainedCalls, or the session
	// was stopped): the server answers 410.
	ErrGone = errors.New("gone")
	// errShutdown is the cause of runs cancelled by Manager.Close; their
	// sessions resume when the server starts again.
	errShutdown = errors.New("server shutting down")
)

// A Display is a harness.Display the session must close.
type Display interface {
	harness.Display
	Close(ctx context.Context) error
}

// Config configures a Manager.
type Config struct {
	Store store.Store // required
	Dir   string      // required: the sessions' files go to Dir/<id>/
	// NewModel builds a session's model; image is the size of the
	// screenshots it is sent. Required for agent sessions.
	NewModel func(ctx context.Context, s Spec, image screen.Size) (harness.Model, error)
	// NewDisplay opens a session's display. Required.
	NewDisplay func(ctx context.Context, s Spec) (Display, error)
	// ApprovalTimeout is how long an approval waits for a human before it
	// counts as denied, unless the session's rules name a timeout; default
	// approvals.DefaultTimeout.
	ApprovalTimeout time.Duration
	// Rules are the server's approval rules for sessions whose spec brings
	// none (approvals.rules); nil: approvals.Default(). A session's
	// supervise and confirm apply on top of either.
	Rules *approvals.Rules
	// MaxSessions bounds the agent and executor sessions whose display is
	// open (or opening) at once; a session past it is refused with
	// ErrTooManySessions, and one that is stopped gives its place back.
	// Sessions restored after a restart are let in even past it. MCP
	// sessions are not counted here (package mcp has its own cap). Zero
	// means DefaultMaxSessions(); negative means no bound.
	MaxSessions int
	// ResumeRemote opens a remote session (an MCP session) that was live
	// when its server stopped again, after a restart or on the replica
	// that adopted it: its display at its last page, attached with
	// ReattachRemote. Nil: such a session is stopped instead.
	ResumeRemote func(ctx context.Context, r RemoteResume) error
	Logger       *slog.Logger // nil: slog.Default()
}

// MemoryPerSession is what DefaultMaxSessions reckons one session's
// browser needs: about 85-110 MB were measured for a browser (or sandbox)
// per session on plain pages (docs/PERFORMANCE.md), and real pages need
// more.
const MemoryPerSession = 200 << 20

// DefaultMaxSessions is the session bound of a machine: its memory, less
// 1 GiB for the server and the system, over MemoryPerSession, between 2
// and 512. Where the memory cannot be read (no /proc/meminfo), 16.
func DefaultMaxSessions() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 16
	}
	return maxSessionsFor(b)
}

// maxSessionsFor reads MemTotal (in kB) from /proc/meminfo's text.
func maxSessionsFor(meminfo []byte) int {
	for line := range strings.Lines(string(meminfo)) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 {
			break
		}
		n := (kb<<10 - 1<<30) / MemoryPerSession
		return int(min(max(n, 2), 512))
	}
	return 16
}

// Manager owns the sessions of a server.
type Manager struct {
	cfg  Config
	st   store.Store
	log  *slog.Logger
	base context.Context // parent of every run; cancelled by Close
	stop context.CancelCauseFunc
	wg   sync.WaitGroup

	q *approvals.Queue // every approval of every session

	mu       sync.Mutex
	sessions map[string]*Session // live sessions; stopped ones are read from the store (Get)
	closed   bool
	open     int      // sessions holding a place under maxOpen (displays open or opening)
	maxOpen  int      // Config.MaxSessions, resolved; <= 0: no bound
	dataDirs []string // absolute
	relDirs  []string // as given, when relative
}

// New returns a Manager. Call Restore to load stored sessions, and Close
// to stop every session's goroutines.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Dir == "" || cfg.NewDisplay == nil {
		return nil, errors.New("session: Config needs a Store, a Dir and NewDisplay")
	}
	base, stop := context.WithCancelCause(context.Background())
	m := &Manager{
		cfg: cfg, st: cfg.Store, log: cmp.Or(cfg.Logger, slog.Default()),
		base: base, stop: stop, sessions: map[string]*Session{},
		maxOpen: cfg.MaxSessions,
	}
	if m.maxOpen == 0 {
		m.maxOpen = DefaultMaxSessions()
	}
	// The directories whose paths never reach a client (scrub): the
	// sessions' and the data directory, as given and absolute.
	for _, d := range []string{cfg.Dir, filepath.Dir(cfg.Dir)} {
		if abs, err := filepath.Abs(d); err == nil && abs != "/" {
			m.dataDirs = append(m.dataDirs, abs)
		}
		if d = filepath.Clean(d); d != "." && d != "/" && !filepath.IsAbs(d) {
			m.relDirs = append(m.relDirs, d)
		}
	}
	m.q = approvals.NewQueue(approvals.QueueConfig{OnRequest: m.onRequest, OnDecision: m.onDecision, OnEvent: m.onEvent})
	m.wg.Go(func() { m.sweep(time.Minute) })
	metricSessions.add(m)
	return m, nil
}

// Close stops every run, closes every display and waits for the
// sessions' goroutines. Sessions keep their stored status, so that a
// later Restore resumes them.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	m.stop(errShutdown)
	m.wg.Wait()
	metricSessions.remove(m)
	var errs []error
	for _, s := range ss {
		errs = append(errs, s.closeDisplay(ctx))
	}
	return errors.Join(errs...)
}

// Get returns a session. A stopped session is not held in memory: it is
// read from the store, as a session that can be read (its history,
// events and screenshots) but not driven.
func (m *Manager) Get(id string) (*Session, error) {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if ok {
		return s, nil
	}
	ctx := context.WithoutCancel(m.base)
	rec, err := m.st.Session(ctx, id)
	switch {
	case err == nil && rec.Status == store.StatusStopped:
		s, err := m.stopped(ctx, rec)
		if err == nil {
			return s, nil
		}
		m.log.Error("read a stopped session", "session", id, "err", err)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		m.log.Error("read a session", "session", id, "err", err)
	case err != nil:
		if when, derr := m.st.Deleted(ctx, id); derr == nil {
			return nil, fmt.Errorf("session %q was deleted by the server's retention at %s: %w", clip(id, 64),
				when.Format(time.RFC3339), ErrGone)
		}
	}
	return nil, fmt.Errorf("session %q: %w", clip(id, 64), ErrNotFound)
}

// errDeleted is the cause that ends the run of a session deleted from
// the store (Forget): nothing is recorded of it, as at a shutdown.
var errDeleted = fmt.Errorf("%w: the session was deleted", errShutdown)

// Forget drops a session that was deleted from the store (the server's
// retention, on this replica or another) from memory: a run it still has
// ends without a record, its display is closed, and Get answers ErrGone
// from then on. An id not held here is ignored.
func (m *Manager) Forget(ctx context.Context, id string) error {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	running, cancel, done := s.running, s.cancel, s.runDone
	s.mu.Unlock()
	if running {
		cancel(errDeleted)
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	err := s.closeDisplay(ctx)
	s.mu.Lock()
	s.release()
	s.mu.Unlock()
	return err
}

// stopped returns a stopped session as read from the store: it holds no
// display, no run and no results, and is not kept.
func (m *Manager) stopped(ctx context.Context, rec store.Session) (*Session, error) {
	var spec Spec
	if err := json.Unmarshal(rec.Config, &spec); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	s := m.newSession(rec, spec)
	s.rec.State = nil
	if err := s.loadEvents(ctx); err != nil {
		return nil, err
	}
	if rec.Kind == KindExecutor {
		s.exec = newExecModel()
		s.exec.end(cmp.Or(rec.Error, "the executor session was stopped"))
		s.exec.release()
	}
	return s, nil
}

// acquire takes a place for a session's display under MaxSessions;
// force takes it even past the bound (a session restored after a
// restart). release gives it back.
func (m *Manager) acquire(force bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errShutdown
	}
	if !force && m.maxOpen > 0 && m.open >= m.maxOpen {
		return fmt.Errorf("%w: %d of %d are open; stop one (DELETE /executor/sessions/:id, POST /session/:id/stop) "+
			"or try again later", ErrTooManySessions, m.open, m.maxOpen)
	}
	m.open++
	return nil
}

func (m *Manager) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open--
}

// Open returns how many sessions hold a display (or are opening one), and
// the bound (<= 0: none).
func (m *Manager) Open() (open, max int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.open, m.maxOpen
}

// forget drops a stopped session from memory: Get reads it from the
// store from then on.
func (m *Manager) forget(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
}

// pathLike is an absolute path of two or more parts, where a word starts
// (not inside a URL).
var pathLike = regexp.MustCompile(`(^|[\s"'(=,\[])(/[^/\s"'():,\[\]]+){2,}`)

// scrub removes the server's paths from what a client reads of an error:
// the data directory's, and any other absolute path.
func (m *Manager) scrub(msg string) string {
	return pathLike.ReplaceAllString(m.scrubDir(msg), "${1}[path]")
}

// scrubDir removes only the data directory from msg: paths under it
// become relative to the sessions' directory. A tool's error may name
// paths the client chose (an upload's file), which it may read.
func (m *Manager) scrubDir(msg string) string {
	const sep = string(filepath.Separator)
	for _, d := range m.dataDirs {
		msg = strings.ReplaceAll(msg, d+sep, "")
		msg = strings.ReplaceAll(msg, d, "[data]")
	}
	for _, d := range m.relDirs {
		msg = strings.ReplaceAll(msg, d+sep, "")
	}
	return msg
}

// Create makes a session from spec and starts its first turn (an agent
// session with user messages) or its executor loop. by is who asked, for
// the audit log.
func (m *Manager) Create(ctx context.Context, kind string, spec Spec, by string) (*Session, error) {
	if err := spec.defaults(kind); err != nil {
		return nil, err
	}
	id, err := newID("s")
	if err != nil {
		return nil, err
	}
	cfg, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	title := spec.Title
	if title == "" && len(spec.Messages) > 0 {
		title = clip(spec.Messages[0].text(), 80)
	}
	rec := store.Session{ID: id, Kind: kind, Title: title, Status: store.StatusIdle, Config: cfg,
		URL: spec.StartURL, Created: now, Updated: now}
	s := m.newSession(rec, spec)
	if kind == KindAgent {
		if m.cfg.NewModel == nil {
			return nil, errors.New("session: no model builder configured")
		}
		model, err := m.cfg.NewModel(ctx, spec, spec.image())
		if err != nil {
			return nil, fmt.Errorf("%w: model: %s", ErrBadRequest, m.scrub(err.Error()))
		}
		s.model = model
	}
	if s.rules, err = m.rules(spec); err != nil {
		return nil, err
	}
	// A place under MaxSessions first: a refused session leaves nothing
	// behind, not even its directory.
	if err := m.acquire(false); err != nil {
		return nil, err
	}
	s.slot = true
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		s.giveBack()
		return nil, fmt.Errorf("session directory: %w", err)
	}
	// The display opens before the session exists, so that a browser
	// that cannot start fails the request instead of the session.
	if err := s.openDisplay(ctx); err != nil {
		s.giveBack()
		_ = os.Remove(s.dir)
		return nil, err
	}
	if err := m.st.CreateSession(ctx, rec); err != nil {
		_ = s.closeDisplay(context.WithoutCancel(ctx))
		_ = os.Remove(s.dir)
		return nil, err
	}
	m.audit(ctx, by, "create", id, "", map[string]any{"kind": kind, "title": title})
	if err := m.add(s); err != nil {
		_ = s.closeDisplay(context.WithoutCancel(ctx))
		return nil, err
	}
	metricCreated.WithLabelValues(kind).Inc()
	s.emit(EventSession, map[string]string{"sessionId": id})
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case KindAgent:
		if len(spec.Messages) > 0 {
			var task []string
			for _, msg := range spec.Messages {
				s.appendMessage("user", msg.Content, "")
				task = append(task, msg.text())
			}
			s.start(ctx, strings.Join(task, "\n\n"), nil)
		}
	case KindExecutor:
		s.exec = newExecModel()
		s.model = s.exec
		s.start(ctx, "", nil)
	}
	return s, nil
}

func (m *Manager) add(s *Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errShutdown
	}
	m.sessions[s.id] = s
	return nil
}

func (m *Manager) rules(spec Spec) (approvals.Rules, error) { return rulesOf(spec, m.cfg.Rules) }

// Sessions lists the stored sessions, newest first.
func (m *Manager) Sessions(ctx context.Context) ([]store.Session, error) {
	return m.st.Sessions(ctx)
}

// audit appends an audit entry, logging a failure.
func (m *Manager) audit(ctx context.Context, actor, action, session, subject string, detail any) {
	a := store.Audit{Time: time.Now().UTC(), Actor: actor, Action: action, Session: session, Subject: subject}
	if detail != nil {
		b, err := json.Marshal(detail)
		if err == nil {
			a.Detail = b
		}
	}
	if err := m.st.AppendAudit(context.WithoutCancel(ctx), &a); err != nil {
		m.log.Error("audit", "action", action, "err", err)
	}
}

// Audit appends an entry to the audit log (logins, for instance).
func (m *Manager) Audit(ctx context.Context, actor, action, session, subject string, detail any) {
	m.audit(ctx, actor, action, session, subject, detail)
}

// Call states, for deciding when a turn waits on the client.
const (
	callOpen       = iota // the server owes it an answer
	callClient            // waiting for the client's result
	callPermission        // waiting for a human's decision
	callDone              // answered
)

type callState struct {
	name   string
	client bool
	state  int
	rec    store.ToolCall // as stored, so that a status change needs no read
}

// SpanSessionID is the span attribute that names a session, on the spans
// of its turns.
const SpanSessionID = "spotter.session.id"

// Session is one session. Its methods are safe for concurrent use.
type Session struct {
	m    *Manager
	id   string
	kind string
	spec Spec
	dir  string
	log  *slog.Logger

	evMu    sync.Mutex    // guards events, lastSeq and changed
	events  []store.Event // the latest events, at most 2*maxCachedEvents; older ones are read from the store
	lastSeq int64         // the seq of the latest event
	changed chan struct{}

	model harness.Model
	rules approvals.Rules
	exec  *execModel // executor sessions only
	// shots is an executor session's running trace, whose screenshots
	// are synced to disk by syncShots, while their records are stored.
	// Guarded by mu.
	shots *trace.Writer

	dispMu sync.Mutex // serializes opening the display
	live   liveHub    // the live view's watchers (live.go)

	mu         sync.Mutex
	rec        store.Session
	saved      savedState
	frameJSON  map[screen.Frame][]byte // the encodings of saved.Frames (stateJSON)
	running    bool
	cancel     context.CancelCauseFunc
	runDone    chan struct{} // closed when the latest run's goroutine returns
	disp       *guard
	step       int // model turns in the current run
	calls      map[string]*callState
	callOrder  []string
	stopSent   bool // a turn_stop tool_use was sent and nothing was delivered since
	answers    map[string]clientAnswer
	waiters    map[string]chan clientAnswer
	denied     map[string]bool   // calls a human (or the timeout) refused
	shotFrames map[string]string // frame id -> shot name of the latest maxShotFrames, for permission requests
	shotOrder  []string          // the frame ids of shotFrames, oldest first
	lastShot   string
	redact     harness.Redactor // every secret of the current run, for what is stored besides its events
	slot       bool             // the session holds a place under MaxSessions (Manager.acquire)
	restored   bool             // restored after a restart: its first display is let in past MaxSessions
	relaunch   string           // a note for the next screenshot after a restart relaunched the display
}

func (m *Manager) newSession(rec store.Session, spec Spec) *Session {
	return &Session{
		m: m, id: rec.ID, kind: rec.Kind, spec: spec, rec: rec,
		dir:     filepath.Join(m.cfg.Dir, rec.ID),
		log:     m.log.With("session", rec.ID),
		changed: make(chan struct{}),
		answers: map[string]clientAnswer{}, waiters: map[string]chan clientAnswer{},
		denied: map[string]bool{}, shotFrames: map[string]string{},
	}
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Kind returns KindAgent or KindExecutor.
func (s *Session) Kind() string { return s.kind }

// Spec returns what the session was created with.
func (s *Session) Spec() Spec { return s.spec }

// Dir returns the directory of the session's files.
func (s *Session) Dir() string { return s.dir }

// Record returns the session's stored record.
func (s *Session) Record() store.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// savedState is what a session keeps in store.Session.State to resume.
type savedState struct {
	Model json.RawMessage `json:"model,omitempty"` // harness.Stateful
	Task  string          `json:"task,omitempty"`  // the task of a run that has not had a turn yet
	Run   *savedRun       `json:"run,omitempty"`   // the turn being answered
	Runs  int             `json:"runs"`            // trace directories used
	// Frames are the latest frames the model was sent, oldest first.
	Frames []screen.Frame `json:"frames,omitempty"`
	// Exec holds an executor session's latest answered calls, so that
	// retries and GET /calls/:id find them after a restart.
	Exec []savedExecCall `json:"exec,omitempty"`
	// Takeover is set while an operator has the display.
	Takeover *savedTakeover `json:"takeover,omitempty"`
	// FrameSeq is the number of the latest frame (see guard.seq).
	FrameSeq int `json:"frameSeq,omitempty"`
	// Remote is what the server running a remote session (an MCP one)
	// needs to resume it (RemoteSpec.State).
	Remote json.RawMessage `json:"remote,omitempty"`
}

// savedTakeover is an operator's takeover, kept across a restart: the
// loop waits for the hand-back, as it did before.
type savedTakeover struct {
	By    string `json:"by,omitempty"`
	Acted bool   `json:"acted,omitempty"` // the operator acted: the model is told after the hand-back
}

type savedRun struct {
	Dir  string        `json:"dir"`
	Step int           `json:"step"`
	Turn savedTurn     `json:"turn"`
	Done []savedResult `json:"done,omitempty"`
	// Begun are the calls that began to act on the display (their intent,
	// recorded before the first such action ran): one without a result is
	// not performed again on resume (harness.Resume.Begun).
	Begun []string `json:"begun,omitempty"`
}

type savedTurn struct {
	Text  string      `json:"text,omitempty"`
	Stop  string      `json:"stop,omitempty"`
	Calls []savedCall `json:"calls"`
}

type savedCall struct {
	ID           string                `json:"id"`
	Name         string                `json:"name"`
	Actions      []actions.Action      `json:"actions,omitempty"`
	Space        screen.Space          `json:"space"`
	FrameID      string                `json:"frameId,omitempty"`
	DecodeErr    string                `json:"decodeErr,omitempty"`
	SafetyChecks []harness.SafetyCheck `json:"safetyChecks,omitempty"`
	Input        json.RawMessage       `json:"input,omitempty"`
	Raw          json.RawMessage       `json:"raw,omitempty"`
	Hash         string                `json:"hash,omitempty"` // an executor call's posted body (execCall.hash), for retries
}

type savedResult struct {
	CallID string       `json:"callId"`
	Ran    int          `json:"ran,omitempty"`
	Err    string       `json:"err,omitempty"`
	Notes  []string     `json:"notes,omitempty"`
	Output string       `json:"output,omitempty"`
	Shot   string       `json:"shot,omitempty"` // relative to the session's directory
	Frame  screen.Frame `json:"frame,omitzero"`
	// Cursor and Acknowledged are kept of an executor call's result (see
	// savedExecCall).
	Cursor       *actions.Point        `json:"cursor,omitempty"`
	Acknowledged []harness.SafetyCheck `json:"acknowledged,omitempty"`
}

const maxFrames = 16

// save writes the session record with its saved state. s.mu is held.
func (s *Session) save() {
	var b batch
	s.saveTo(&b)
	s.commit(&b, true)
	if s.rec.Status == store.StatusStopped && !s.running {
		s.release()
	}
}

// saveTo adds the session record with its saved state to b. s.mu is held.
func (s *Session) saveTo(b *batch) {
	if s.disp != nil {
		s.saved.FrameSeq = s.disp.frameSeq()
	}
	st, err := s.stateJSON()
	if err != nil {
		s.log.Error("encode session state", "err", err)
		return
	}
	s.rec.State = st
	s.rec.Updated = time.Now().UTC()
	b.UpdateSession(s.rec)
}

// release lets go of what a stopped session held in memory (its results,
// events, screenshots' index, the state it saved) and drops it from the
// Manager: Get reads it from the store from then on. Its display is
// closed by whoever stopped it. s.mu is held.
func (s *Session) release() {
	s.rec.State = nil
	s.saved, s.frameJSON = savedState{}, nil
	s.calls, s.callOrder = nil, nil
	clear(s.answers)
	clear(s.denied)
	clear(s.shotFrames)
	s.shotOrder = nil
	if s.exec != nil {
		s.exec.release()
	}
	s.evMu.Lock()
	s.events = nil
	s.evMu.Unlock()
	s.m.forget(s)
}

// appendMessage stores a history message. s.mu is held.
func (s *Session) appendMessage(role string, content any, callID string) {
	var wb batch
	s.appendMessageTo(&wb, role, content, callID)
	s.commit(&wb, true)
}

// appendMessageTo adds a history message to wb. s.mu is held.
func (s *Session) appendMessageTo(wb *batch, role string, content any, callID string) {
	var b json.RawMessage
	switch c := content.(type) {
	case json.RawMessage:
		b = c
	default:
		var err error
		if b, err = json.Marshal(c); err != nil {
			s.log.Error("encode message", "err", err)
			return
		}
	}
	if len(b) == 0 {
		b = json.RawMessage(`""`)
	}
	wb.AppendMessage(&store.Message{Session: s.id, Role: role, Content: b, CallID: callID, Time: time.Now().UTC()})
}

func (s *Session) putCall(c store.ToolCall) {
	var b batch
	s.putCallTo(&b, c)
	s.commit(&b, true)
}

// putCallTo adds a tool call's record to b. s.mu is held.
func (s *Session) putCallTo(b *batch, c store.ToolCall) {
	c.Session = s.id
	c.Updated = time.Now().UTC()
	if c.Created.IsZero() {
		c.Created = c.Updated
	}
	b.PutToolCall(c)
	if cs := s.calls[c.ID]; cs != nil {
		cs.rec = c
	}
}

// setCallStatus updates a stored call's status, keeping the rest. s.mu is
// held.
func (s *Session) setCallStatus(id, status string, result any) {
	var b batch
	s.setCallStatusTo(&b, id, status, result)
	s.commit(&b, true)
}

// setCallStatusTo adds setCallStatus's write to b. s.mu is held.
func (s *Session) setCallStatusTo(b *batch, id, status string, result any) {
	var rec store.ToolCall
	if cs := s.calls[id]; cs != nil && cs.rec.ID == id {
		rec = cs.rec
	} else {
		// Not a call of the current turn (an MCP session's, say): read it,
		// once what the session committed before is stored.
		s.barrier()
		calls, err := s.m.st.ToolCalls(context.WithoutCancel(s.m.base), s.id)
		if err != nil {
			s.log.Error("read tool calls", "err", err)
			return
		}
		i := slices.IndexFunc(calls, func(c store.ToolCall) bool { return c.ID == id })
		if i < 0 {
			return
		}
		rec = calls[i]
	}
	rec.Status = status
	if result != nil {
		if b, err := json.Marshal(result); err == nil {
			rec.Result = b
		}
	}
	if cs := s.calls[id]; cs != nil {
		cs.rec = rec
	}
	s.putCallTo(b, rec)
}

// start begins a run in a goroutine the Manager owns. s.mu is held and no
// run is active. ctx is what started the run (a client's request): the
// run outlives it and keeps only its trace, which the run's turns
// continue.
func (s *Session) start(ctx context.Context, task string, resume *harness.Resume) {
	s.running = true
	s.rec.Status = store.StatusRunning
	s.rec.Error = ""
	s.step = 0
	if resume != nil {
		s.step = resume.Step
	} else {
		s.saved.Task = task
	}
	dir := s.nextRun()
	s.save()
	parent := oteltrace.SpanContextFromContext(ctx)
	ctx, cancel := context.WithCancelCause(s.m.base)
	if parent.IsValid() {
		ctx = oteltrace.ContextWithSpanContext(ctx, parent)
	}
	done := make(chan struct{})
	s.cancel, s.runDone = cancel, done
	s.m.wg.Go(func() {
		defer close(done)
		defer cancel(nil)
		s.run(ctx, dir, task, resume)
	})
}

// nextRun names the trace directory of the session's next run (or, for
// a remote session, of the display it runs on). Every run writes one of
// its own; one that exists already (a run the process died in, after its
// directory was made and before its count was saved) is skipped, not
// written into. s.mu is held; the caller saves.
func (s *Session) nextRun() string {
	for {
		s.saved.Runs++
		dir := fmt.Sprintf("t%d", s.saved.Runs)
		if _, err := os.Lstat(filepath.Join(s.dir, dir)); err != nil {
			return dir // not there (or unreadable: trace.Create says why)
		}
	}
}

// run drives the harness loop for one run of the session.
func (s *Session) run(ctx context.Context, dir, task string, resume *harness.Resume) {
	if err := s.openDisplay(ctx); err != nil {
		s.finish(ctx, harness.Outcome{Stop: harness.StopError, Err: err.Error()}, "")
		return
	}
	tw, err := trace.Create(filepath.Join(s.dir, dir))
	if err != nil {
		s.finish(ctx, harness.Outcome{Stop: harness.StopError, Err: err.Error()}, "")
		return
	}
	s.mu.Lock()
	disp := s.disp
	if s.exec != nil {
		tw.DeferShotSync()
		s.shots = tw
	}
	s.mu.Unlock()
	if disp == nil { // stopped while it opened
		_ = tw.Close()
		s.finish(ctx, harness.Outcome{Stop: harness.StopError, Err: "the display was closed"}, "")
		return
	}
	// The rules and the secret decisions inspect whichever display is
	// current: a relaunched one after a crash.
	approver, err := s.m.Approver(s.id, s.rules, s.spec.Policy.Hosts, disp.dom())
	if err != nil {
		_ = tw.Close()
		s.finish(ctx, harness.Outcome{Stop: harness.StopError, Err: err.Error()}, "")
		return
	}
	cfg := harness.Config{
		Model:          s.model,
		OnTurn:         func(t harness.Turn, r harness.Redactor) { s.onTurn(dir, t, r) },
		Display:        disp,
		Task:           task,
		Policy:         *s.spec.Policy,
		Capture:        screen.CaptureOptions{Size: s.spec.image(), Format: screen.PNG},
		MaxSteps:       s.spec.MaxSteps,
		Approver:       approver,
		Inspector:      inspector(disp.dom()),
		OnEvent:        func(e trace.Event) { s.onEvent(dir, e) },
		OnIntent:       s.onIntent,
		Resume:         resume,
		Trace:          tw,
		ModelName:      strings.Trim(s.spec.Model.Provider+"/"+s.spec.Model.Name, "/"),
		Logger:         s.log,
		SpanAttributes: []attribute.KeyValue{attribute.String(SpanSessionID, s.id), attribute.String("spotter.session.kind", s.kind)},
	}
	if p := s.spec.Model.Provider; p != ProviderScript && p != ProviderDemo {
		cfg.Provider, cfg.ModelID = p, s.spec.Model.Name
	}
	if len(s.spec.Tools) > 0 {
		cfg.Client = clientTools{s}
	}
	if s.kind == KindExecutor {
		cfg.MaxSteps = 1 << 20
		cfg.RepeatWarn, cfg.RepeatStop = 1<<30, 1<<30
		cfg.ModelName = "executor/" + s.spec.Provider
		cfg.Provider, cfg.ModelID = "", "" // the client asks its model
	}
	out, err := harness.Run(ctx, cfg)
	s.mu.Lock()
	s.shots = nil
	s.mu.Unlock()
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if err != nil && out.Err == "" {
		out = harness.Outcome{Stop: harness.StopError, Err: err.Error()}
	}
	// A stopped session's browser closes; so does an executor session's
	// that ended (nothing can run on it any more), before its turn_stop,
	// so that a client that saw the end finds its place under MaxSessions
	// free. A shutdown leaves the displays to Manager.Close.
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrStopped) || (s.kind == KindExecutor && !errors.Is(cause, errShutdown)) {
		if err := s.closeDisplay(context.WithoutCancel(ctx)); err != nil {
			s.log.WarnContext(ctx, "close display", "err", err)
		}
	}
	s.finish(ctx, out, dir)
}

// inspector returns d as the executor's Inspector when it has a DOM, or
// nil.
func inspector(d any) harness.Inspector {
	if in, ok := d.(harness.Inspector); ok {
		return in
	}
	return nil
}

// Busy reports whether a run is going: a stream that waits for the next
// turn_stop will get one.
func (s *Session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// finish records how a run ended and emits its turn_stop, with the link
// to the report of the run's trace dir, if it wrote one. A run cancelled
// by the server's shutdown records nothing, so that it resumes.
func (s *Session) finish(ctx context.Context, out harness.Outcome, dir string) {
	cause := context.Cause(ctx)
	if errors.Is(cause, errShutdown) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	s.calls, s.callOrder = nil, nil
	s.saved.Run, s.saved.Task = nil, ""
	clear(s.answers)
	// What a client reads of the error never names the server's files.
	if out.Err != "" {
		s.log.WarnContext(ctx, "run ended", "stop", out.Stop, "err", out.Err)
	}
	stop := TurnStopEvent{Error: s.m.scrub(out.Err), Report: s.reportURL(dir)}
	switch out.Stop {
	case harness.StopEndTurn, harness.StopRefusal, harness.StopPause:
		stop.StopReason = StopEndTurn
		s.rec.Status = store.StatusIdle
	case harness.StopMaxSteps:
		stop.StopReason = StopMaxSteps
		s.rec.Status = store.StatusFailed
	default:
		stop.StopReason = StopError
		s.rec.Status = store.StatusFailed
	}
	if errors.Is(cause, ErrStopped) {
		stop.Error = ErrStopped.Error()
		s.rec.Status = store.StatusStopped
	}
	s.rec.Error = stop.Error
	if s.exec != nil {
		s.exec.end(cmp.Or(stop.Error, "the executor session ended"))
	}
	s.saveModel()
	s.save()
	s.emit(EventTurnStop, stop)
}

// Stop cancels the session's run and closes its display. It returns once
// the display is closed (or ctx is done), so that the session's place
// under MaxSessions is free.
func (s *Session) Stop(ctx context.Context, by string) error {
	s.mu.Lock()
	running, cancel, done := s.running, s.cancel, s.runDone
	if !running {
		s.rec.Status = store.StatusStopped
		s.save()
	}
	s.mu.Unlock()
	s.m.audit(ctx, by, "stop", s.id, "", nil)
	if running {
		cancel(ErrStopped)
		select {
		case <-done: // the run closed the display
		case <-ctx.Done():
		}
		return nil
	}
	return s.closeDisplay(ctx)
}

// saveModel keeps the model's conversation for a restart, with every
// secret the run has seen redacted: the model's own calls hold what it
// typed. s.mu is held.
func (s *Session) saveModel() {
	sm, ok := s.model.(harness.Stateful)
	if !ok {
		return
	}
	b, err := sm.MarshalState()
	if err != nil {
		s.log.Error("save model state", "err", err)
		return
	}
	s.saved.Model = s.redact.JSON(b)
}

// onTurn records a new turn of the model and emits its events. The loop
// calls it before any of the turn's calls runs, with the turn as every
// record shows it (secret texts masked) and the run's redactor, so that
// everything saved here (state, rows, events) is already masked.
func (s *Session) onTurn(dir string, turn harness.Turn, r harness.Redactor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step++
	s.rec.Step++
	s.saved.Task = ""
	s.redact = r
	s.saveModel()
	var b batch
	st := savedTurn{Text: turn.Text, Stop: string(turn.Stop)}
	s.calls = map[string]*callState{}
	s.callOrder = nil
	s.stopSent = false
	clear(s.answers)
	var evs []ToolCallEvent
	for _, c := range turn.Calls {
		sc := savedCall{ID: c.ID, Name: c.Name, Actions: c.Actions, Space: c.Space, FrameID: c.FrameID,
			SafetyChecks: c.SafetyChecks, Input: c.Input, Raw: validJSON(c.Raw)}
		if s.exec != nil {
			sc.Hash = s.exec.hashOf(c.ID)
		}
		ev := ToolCallEvent{ToolCallID: c.ID, Name: c.Name, Input: c.Input, Actions: c.Actions}
		if c.DecodeErr != nil {
			sc.DecodeErr = c.DecodeErr.Error()
			ev.Error = sc.DecodeErr
		}
		if len(ev.Input) == 0 {
			ev.Input = rawInput(c.Raw)
		}
		st.Calls = append(st.Calls, sc)
		client := s.spec.hasTool(c.Name) && c.DecodeErr == nil && turn.Stop != harness.StopMaxTokens
		cs := &callState{name: c.Name, client: client, state: callOpen}
		status := store.CallPending
		if client {
			cs.state, status = callClient, store.CallClient
		}
		s.calls[c.ID] = cs
		s.callOrder = append(s.callOrder, c.ID)
		s.putCallTo(&b, store.ToolCall{ID: c.ID, Step: s.rec.Step, Name: c.Name, Input: ev.Input, Status: status})
		evs = append(evs, ev)
	}
	s.saved.Run = &savedRun{Dir: dir, Step: s.step, Turn: st}
	s.saveTo(&b)
	s.appendMessageTo(&b, "assistant", assistantContent{Text: turn.Text, ToolCalls: evs}, "")
	if turn.Text != "" {
		s.emitTo(&b, EventTextDelta, map[string]string{"text": turn.Text})
	}
	for _, ev := range evs {
		s.emitTo(&b, EventToolCall, ev)
	}
	s.maybeStopTo(&b)
	// The turn is stored while its first call runs: the store's queue
	// keeps it before anything the calls write (their results, an
	// approval), and its events reach no one before it is stored.
	s.commit(&b, false)
}

// assistantContent is the content of an assistant message in the history.
type assistantContent struct {
	Text      string          `json:"text"`
	ToolCalls []ToolCallEvent `json:"toolCalls,omitempty"`
}

// onIntent records, durably, that a call of the turn is about to act on
// the display (harness.Config.OnIntent), before it does: a run resumed
// after a crash, here or on the replica that adopts the session, answers
// the call with its outcome unknown instead of performing it again.
func (s *Session) onIntent(ctx context.Context, callID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.saved.Run
	if run == nil || slices.Contains(run.Begun, callID) {
		return nil
	}
	run.Begun = append(run.Begun, callID)
	var b batch
	s.saveTo(&b)
	if err := s.m.st.Write(ctx, &b.Batch); err != nil {
		run.Begun = run.Begun[:len(run.Begun)-1]
		s.log.Error("record a call's intent", "call", callID, "err", err)
		return errors.New("the server could not record it")
	}
	return nil
}

// onEvent turns the loop's trace events into session state and events.
func (s *Session) onEvent(dir string, e trace.Event) {
	if s.m.base.Err() != nil {
		// The server is shutting down: results made of cancellations are
		// not the calls' real answers, and the turn resumes on restart.
		return
	}
	switch e.Type {
	case trace.TypeCall:
		if s.kind == KindMCP {
			s.onRemoteCall(e)
		}
	case trace.TypeRunStart, trace.TypeNote:
		if e.Frame.ID != "" {
			s.mu.Lock()
			var b batch
			s.noteFrameTo(&b, dir, e)
			s.saveTo(&b)
			stored := s.commit(&b, false)
			s.syncShots()
			<-stored
			s.mu.Unlock()
		}
	case trace.TypeResult:
		s.onResult(dir, e)
		s.m.closeOrphans(s.id, e.CallID)
	}
}

// syncShots syncs the screenshots an executor session's trace wrote
// since the last call to disk (trace.Writer.DeferShotSync). s.mu is held.
func (s *Session) syncShots() {
	if s.shots == nil {
		return
	}
	if err := s.shots.SyncShots(); err != nil {
		s.log.Error("sync screenshots", "err", err)
	}
}

// syncShotsAsync is syncShots in a goroutine of its own; the channel it
// returns is closed when it is done. s.mu is held.
func (s *Session) syncShotsAsync() <-chan struct{} {
	done := make(chan struct{})
	tw := s.shots
	if tw == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		if err := tw.SyncShots(); err != nil {
			s.log.Error("sync screenshots", "err", err)
		}
	}()
	return done
}

// noteFrameTo remembers a frame the model was sent, and adds the index
// of its screenshot to b. s.mu is held.
func (s *Session) noteFrameTo(b *batch, dir string, e trace.Event) {
	name := ""
	if e.Shot != "" {
		name = dir + "/" + e.Shot
		s.noteShotFrame(e.Frame.ID, name)
		if !e.Frame.Zoomed() {
			s.lastShot = name
		}
		fi, _ := os.Stat(filepath.Join(s.dir, filepath.FromSlash(name)))
		var size int64
		if fi != nil {
			size = fi.Size()
		}
		b.PutShot(store.Shot{Session: s.id, Name: name, FrameID: e.Frame.ID, Step: s.rec.Step, Bytes: size,
			Time: time.Now().UTC()})
	}
	if e.Frame.URL != "" && !strings.HasPrefix(e.Frame.URL, "about:") && !e.Frame.Zoomed() {
		s.rec.URL = e.Frame.URL
	}
	fr := append(s.saved.Frames, e.Frame)
	if len(fr) > maxFrames {
		fr = fr[len(fr)-maxFrames:]
	}
	s.saved.Frames = fr
}

// maxShotFrames bounds the screenshots a session remembers by frame, for
// the approval requests of calls that refer to them: calls refer to the
// latest frames (older ones are flagged as stale).
const maxShotFrames = 4 * maxFrames

// noteShotFrame remembers the screenshot of a frame. s.mu is held.
func (s *Session) noteShotFrame(frameID, name string) {
	if _, ok := s.shotFrames[frameID]; !ok {
		s.shotOrder = append(s.shotOrder, frameID)
	}
	s.shotFrames[frameID] = name
	for len(s.shotOrder) > maxShotFrames {
		delete(s.shotFrames, s.shotOrder[0])
		s.shotOrder = slices.Delete(s.shotOrder, 0, 1)
	}
}

// ShotURL is where a session's screenshot file is served.
func ShotURL(session, name string) string { return "/session/" + session + "/shots/" + name }

// onResult records a call's result, in one batch of writes, and returns
// once it is stored; an executor session's returns at once, and the
// call's client is answered once it is stored.
func (s *Session) onResult(dir string, e trace.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b batch
	if e.Frame.ID != "" {
		s.noteFrameTo(&b, dir, e)
	}
	sr := savedResult{CallID: e.CallID, Ran: e.Ran, Err: e.Error, Notes: e.Notes, Output: e.Text, Frame: e.Frame}
	res := ToolResultEvent{ToolCallID: e.CallID, IsError: e.Error != ""}
	status := store.CallDone
	switch {
	case e.Client:
		text := e.Text
		if e.Error != "" {
			text = e.Error
		}
		res.Content = []Content{{Type: "text", Text: s.m.scrubDir(text)}}
	default:
		text := "ok"
		if e.Error != "" {
			text = e.Error
		}
		if len(e.Notes) > 0 {
			text += "\n" + strings.Join(e.Notes, "\n")
		}
		res.Content = []Content{{Type: "text", Text: s.m.scrubDir(text)}}
		if e.Shot != "" {
			sr.Shot = dir + "/" + e.Shot
			res.Content = append(res.Content, Content{Type: "image", MimeType: mimeType(e.Shot), URL: ShotURL(s.id, sr.Shot)})
		}
	}
	switch {
	case s.denied[e.CallID]:
		status = store.CallDenied
	case e.Error != "":
		status = store.CallFailed
	}
	delete(s.denied, e.CallID)
	if s.exec != nil && sr.Shot != "" {
		s.exec.noteShot(e.CallID, sr.Shot)
	}
	if s.saved.Run != nil {
		s.saved.Run.Done = append(s.saved.Run.Done, sr)
	}
	if c := s.calls[e.CallID]; c != nil {
		c.state = callDone
	}
	s.saveTo(&b)
	s.setCallStatusTo(&b, e.CallID, status, res)
	s.appendMessageTo(&b, "tool", res, e.CallID)
	if !e.Client {
		s.emitTo(&b, EventToolResult, res)
	}
	s.maybeStopTo(&b)
	if s.exec != nil {
		// An executor call's client is answered once the result is
		// stored (awaitCall waits for it), while its answer is encoded.
		// The screenshot's file is synced while the store syncs its
		// records and the answer is encoded.
		s.exec.noteStored(e.CallID, s.commit(&b, false), s.syncShotsAsync())
		return
	}
	s.commit(&b, true)
}

// maybeStop emits turn_stop tool_use when everything the turn still owes
// waits on the client: application-side results or a human's decision
// (a display call waiting for permission holds back the ones after it).
// s.mu is held.
func (s *Session) maybeStop() {
	var b batch
	s.maybeStopTo(&b)
	s.commit(&b, true)
}

// maybeStopTo is maybeStop with its writes added to b. s.mu is held.
func (s *Session) maybeStopTo(b *batch) {
	if s.stopSent || s.calls == nil || s.kind == KindExecutor {
		return
	}
	waiting := false
	for _, id := range s.callOrder {
		c := s.calls[id]
		switch {
		case c.state == callDone:
			continue
		case c.client:
			waiting = true
			continue
		}
		// The first display call not yet answered is the one the loop is
		// on; later ones wait behind it.
		if c.state != callPermission {
			return
		}
		waiting = true
		break
	}
	if !waiting {
		return
	}
	// Check the remaining display calls: only the first open one matters.
	for _, id := range s.callOrder {
		c := s.calls[id]
		if c.client || c.state == callDone {
			continue
		}
		if c.state != callPermission {
			return
		}
		break
	}
	s.stopSent = true
	s.rec.Status = store.StatusWaiting
	s.saveTo(b)
	s.emitTo(b, EventTurnStop, TurnStopEvent{StopReason: StopToolUse})
}

// clientAnswer is an application-side tool's result from the client.
type clientAnswer struct {
	text    string
	isError bool
}

// clientTools hands application-side calls to the session's client.
type clientTools struct{ s *Session }

func (c clientTools) Has(name string) bool { return c.s.spec.hasTool(name) }

func (c clientTools) Run(ctx context.Context, call harness.Call) (string, error) {
	s := c.s
	s.mu.Lock()
	if a, ok := s.answers[call.ID]; ok {
		delete(s.answers, call.ID)
		s.mu.Unlock()
		return a.result()
	}
	ch := make(chan clientAnswer, 1)
	s.waiters[call.ID] = ch
	s.mu.Unlock()
	select {
	case a := <-ch:
		return a.result()
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.waiters, call.ID)
		s.mu.Unlock()
		return "", context.Cause(ctx)
	}
}

func (a clientAnswer) result() (string, error) {
	if a.isError {
		return "", errors.New(a.text)
	}
	return a.text, nil
}

// Post delivers a client's messages: user messages start a new run,
// tool messages answer application-side calls and tool_permission
// messages decide approvals. Nothing is applied unless all of it fits
// what the session waits for (ErrConflict otherwise).
func (s *Session) Post(ctx context.Context, msgs []InMessage, by string) error {
	if len(msgs) == 0 {
		return bad("no messages")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kind != KindAgent {
		return fmt.Errorf("%w: a %s session takes calls, not messages", ErrConflict, s.kind)
	}
	if s.rec.Status == store.StatusStopped {
		return fmt.Errorf("%w: the session is stopped", ErrConflict)
	}
	if s.model == nil {
		// Its model could not be rebuilt after a restart or an adoption
		// (a client's key, held in memory only, is gone): the record
		// says why, and nothing can run.
		return fmt.Errorf("%w: the session cannot continue: %s", ErrConflict,
			cmp.Or(s.rec.Error, "its model could not be rebuilt after the server restarted"))
	}
	var users []InMessage
	seen := map[string]bool{}
	type perm struct {
		req approvals.Request
		v   approvals.Verdict
	}
	var perms []perm
	for _, m := range msgs {
		switch m.Role {
		case "user":
			users = append(users, m)
			continue
		case "tool", "tool_permission":
		default:
			return bad("message role %q: want user, tool or tool_permission", m.Role)
		}
		if m.ToolCallID == "" || seen[m.ToolCallID] {
			return bad("every tool and tool_permission message needs a distinct toolCallId")
		}
		seen[m.ToolCallID] = true
		c := s.calls[m.ToolCallID]
		if m.Role == "tool" {
			if c == nil || !c.client || c.state != callClient {
				return fmt.Errorf("%w: no application-side call %q is waiting for a result", ErrConflict, m.ToolCallID)
			}
			continue
		}
		p, ok := s.m.pendingFor(s.id, m.ToolCallID, anyIndex)
		if !ok {
			return fmt.Errorf("%w: no permission is pending for call %q", ErrConflict, m.ToolCallID)
		}
		if m.Edit != nil && !m.Granted {
			return bad("an edit needs granted: true")
		}
		d := Decision{Decision: "deny", Reason: m.Reason}
		if m.Granted {
			d.Decision = "approve"
			if m.Edit != nil {
				d.Decision, d.Edit = "edit", m.Edit
			}
		}
		v, err := d.verdict(p, by)
		if err != nil {
			return err
		}
		perms = append(perms, perm{p, v})
	}
	if len(users) > 0 && (s.running || len(seen) > 0) {
		return fmt.Errorf("%w: the session is busy with a turn; answer its calls first", ErrConflict)
	}
	if len(perms) > 0 {
		// Decisions first, so that the loop never sees an answered
		// application-side call beside a display call still waiting for
		// its human. The queue tells the session of each decision
		// (approval_decided), which takes s.mu: decide without holding it.
		s.mu.Unlock()
		for _, p := range perms {
			if err := s.m.q.Decide(p.req.ID, p.v); err != nil {
				s.mu.Lock()
				return s.m.decideErr(ctx, p.req.ID, err)
			}
		}
		s.mu.Lock()
	}
	for _, m := range msgs {
		if m.Role != "tool" {
			continue
		}
		if c := s.calls[m.ToolCallID]; c != nil {
			c.state = callDone
		}
		a := clientAnswer{text: m.text(), isError: m.IsError}
		if ch, ok := s.waiters[m.ToolCallID]; ok {
			delete(s.waiters, m.ToolCallID)
			ch <- a
		} else {
			s.answers[m.ToolCallID] = a
		}
	}
	s.stopSent = false
	if len(users) > 0 {
		var task []string
		for _, m := range users {
			s.appendMessage("user", m.Content, "")
			task = append(task, m.text())
		}
		s.start(ctx, strings.Join(task, "\n\n"), nil)
		return nil
	}
	s.maybeStop()
	return nil
}

// History is a session's stored history (GET /session/:id).
type History struct {
	Session   store.Session    `json:"session"`
	Messages  []HistoryMessage `json:"messages"`
	ToolCalls []store.ToolCall `json:"toolCalls"`
	Approvals []store.Approval `json:"approvals"`
	LastSeq   int64            `json:"lastSeq"`
}

// HistoryMessage is one message of a history, in the protocol's shape.
type HistoryMessage struct {
	Seq        int64           `json:"seq"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCallEvent `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Time       time.Time       `json:"time"`
}

// History reads the session's history from the store.
func (s *Session) History(ctx context.Context) (History, error) {
	h := History{Session: s.Record(), LastSeq: s.LastSeq()}
	h.Session.State = nil
	msgs, err := s.m.st.Messages(ctx, s.id)
	if err != nil {
		return h, err
	}
	for _, m := range msgs {
		hm := HistoryMessage{Seq: m.Seq, Role: m.Role, Content: m.Content, ToolCallID: m.CallID, Time: m.Time}
		switch m.Role {
		case "assistant":
			var ac assistantContent
			if json.Unmarshal(m.Content, &ac) == nil {
				hm.Content, _ = json.Marshal(ac.Text)
				hm.ToolCalls = ac.ToolCalls
			}
		case "tool":
			var r ToolResultEvent
			if json.Unmarshal(m.Content, &r) == nil {
				hm.Content, _ = json.Marshal(r.Content)
				hm.IsError = r.IsError
			}
		}
		h.Messages = append(h.Messages, hm)
	}
	if h.ToolCalls, err = s.m.st.ToolCalls(ctx, s.id); err != nil {
		return h, err
	}
	if h.Approvals, err = s.m.st.Approvals(ctx, store.ApprovalFilter{Session: s.id}); err != nil {
		return h, err
	}
	h.Messages = nonNil(h.Messages)
	h.ToolCalls = nonNil(h.ToolCalls)
	h.Approvals = nonNil(h.Approvals)
	return h, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Shot returns the newest screenshot of the session: the display's live
// one when it is open, else the last stored file.
func (s *Session) Shot() (screen.Shot, bool) {
	s.mu.Lock()
	g, last := s.disp, s.lastShot
	s.mu.Unlock()
	if g != nil {
		if shot, ok := g.latest(); ok {
			return shot, true
		}
	}
	if last == "" {
		return screen.Shot{}, false
	}
	b, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(last)))
	if err != nil {
		return screen.Shot{}, false
	}
	return screen.Shot{Data: b, Frame: screen.Frame{Format: screen.Format(strings.TrimPrefix(filepath.Ext(last), "."))}}, true
}

// NewID returns a new session id, as the Manager gives its sessions:
// for a server that names the sessions it records (AttachRemote).
func NewID() (string, error) { return newID("s") }

func newID(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func mimeType(name string) string {
	if strings.HasSuffix(name, ".jpg") || strings.HasSuffix(name, ".jpeg") {
		return "image/jpeg"
	}
	return "image/png"
}

func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

// rawInput picks the arguments out of a provider's raw call: the input of
// an Anthropic tool_use, the action(s) of an OpenAI computer_call, the args
// of a Gemini functionCall; else the raw call itself.
func rawInput(raw json.RawMessage) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return validJSON(raw)
	}
	for _, k := range []string{"input", "actions", "action", "args", "arguments"} {
		if b, ok := v[k]; ok {
			return b
		}
	}
	if fc, ok := v["functionCall"]; ok {
		return rawInput(fc)
	}
	return raw
}
