// Package trace records a run of the screenshot-action loop and renders it.
//
// A trace is a directory:
//
//	events.jsonl   one JSON Event per line, in the order they happened
//	shots/         every screenshot, named after its frame: shots/f0007.png
//	report.html    written by WriteReport: one self-contained page
//
// The loop creates a Writer with Create, appends Events with Write and saves
// screenshots with WriteShot, and calls Close when the run ends. Read loads
// the events back, even from a trace whose writer crashed mid-line, and
// WriteReport renders them as a timeline of screenshots with the points the
// model aimed at marked on them.
//
// A run writes these events, in this order:
//
//	run_start   Task, Model; Shot and Frame of the first screenshot; Page
//	model_turn  Step, Text (the model's words), Stop, Usage, Elapsed
//	call        Step, CallID, Name, Space, FrameID (as the model gave it), Raw; Error if it did not decode
//	action      Step, CallID, Index, Action (model space), Mapped (CSS px), FrameID and Frame it was
//	            mapped with, Stale, Secret; Error if it was refused or failed; Elapsed
//	result      Step, CallID, Ran, Error, Notes, Shot and Frame of the screenshot taken after the batch, Elapsed;
//	            Page: the console messages and requests of the page since the screenshot before
//	run_end     Stop, Step (steps taken), Error, Elapsed (the whole run)
//
// note and error events may come at any point; Step is zero outside a step.
// Any event that carries Shot and Frame makes that screenshot known to the
// report, so a later call can refer to it by FrameID (a zoom capture, say,
// recorded as a note).
package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// File and directory names inside a trace directory.
const (
	EventsFile = "events.jsonl"
	ShotsDir   = "shots"
	ReportFile = "report.html"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrClosed marks a write to a Writer after Close.
	ErrClosed = errors.New("trace writer is closed")
	// ErrTruncated marks a trace whose last line is an unfinished event,
	// as a crash in the middle of a write leaves it. Read still returns
	// every complete event.
	ErrTruncated = errors.New("trace ends in an unfinished event")
	// ErrCorrupt marks a trace with a line that is not an event.
	ErrCorrupt = errors.New("trace is corrupt")
)

// Type says what an Event records.
type Type string

// Event types. Stored by name: add new ones, never rename.
const (
	TypeRunStart  Type = "run_start"
	TypeModelTurn Type = "model_turn"
	TypeCall      Type = "call"
	TypeAction    Type = "action"
	TypeResult    Type = "result"
	TypeRunEnd    Type = "run_end"
	TypeNote      Type = "note"
	TypeError     Type = "error"
)

// Usage is what a model turn cost. It has the fields of harness.Usage, so
// the loop converts with trace.Usage(turn.Usage).
type Usage struct {
	InputTokens  int     `json:"input_tokens,omitzero"`
	OutputTokens int     `json:"output_tokens,omitzero"`
	CachedTokens int     `json:"cached_tokens,omitzero"`
	CostUSD      float64 `json:"cost_usd,omitzero"`
}

// Event is one line of events.jsonl. It is plain data; which fields are set
// depends on Type (see the package documentation). Steps count from 1.
type Event struct {
	Seq    int       `json:"seq"`
	Time   time.Time `json:"time"`
	Type   Type      `json:"type"`
	Step   int       `json:"step,omitzero"`
	CallID string    `json:"call_id,omitempty"`
	Index  int       `json:"index,omitzero"` // action: index within its call's batch, from 0

	Task  string `json:"task,omitempty"`  // run_start
	Model string `json:"model,omitempty"` // run_start: provider and model name
	Text  string `json:"text,omitempty"`  // model_turn: the model's words; note: the note

	Name  string          `json:"name,omitempty"`  // call: the tool name the model used
	Space screen.Space    `json:"space,omitzero"`  // call: the coordinate space of its actions
	Raw   json.RawMessage `json:"raw,omitempty"`   // call: as the provider sent it; must be valid JSON
	Input json.RawMessage `json:"input,omitempty"` // call: an application-side tool's arguments; must be valid JSON
	// Client marks a call and result of an application-side tool, which
	// the session's client ran; its result's Text is the tool's answer.
	Client bool `json:"client,omitzero"`
	// Actor says who proposed a call or action: "model" (the default,
	// left empty), "client" (an executor or MCP client), "operator" (a
	// human during a takeover) or "replay".
	Actor string   `json:"actor,omitempty"`
	Stop  string   `json:"stop,omitempty"`  // model_turn, run_end: a harness.StopReason
	Usage Usage    `json:"usage,omitzero"`  // model_turn
	Notes []string `json:"notes,omitempty"` // result: things the model was told that are not failures

	Action actions.Action `json:"action,omitzero"` // action: as validated, in model coordinates
	Mapped screen.Mapped  `json:"mapped,omitzero"` // action: as performed, in CSS pixels
	// Secret marks an action whose Text must never be shown.
	Secret bool `json:"secret,omitzero"`
	// Edited marks an action a human changed before it ran; Action and
	// Mapped are the edited ones.
	Edited bool `json:"edited,omitzero"`

	FrameID string       `json:"frame_id,omitempty"` // call, action: the screenshot the coordinates refer to
	Stale   bool         `json:"stale,omitzero"`     // action: FrameID is not the latest screenshot
	Frame   screen.Frame `json:"frame,omitzero"`     // the geometry of Shot, or of FrameID for an action
	Shot    string       `json:"shot,omitempty"`     // a screenshot file, relative to the trace directory

	Ran   int    `json:"ran,omitzero"`    // result: actions of the batch that completed
	Error string `json:"error,omitempty"` // what failed, in words

	// Page is what the page logged to its console and requested since the
	// screenshot before (run_start, result), as the display saw it.
	Page screen.PageLog `json:"page,omitzero"`

	// Elapsed is how long the thing took. It is stored as elapsed_ms, a
	// number of milliseconds with microsecond precision.
	Elapsed time.Duration `json:"-"`
}

// plainEvent has Event's fields without its methods.
type plainEvent Event

type eventJSON struct {
	plainEvent
	ElapsedMS float64 `json:"elapsed_ms,omitzero"`
}

// MarshalJSON stores Elapsed in milliseconds.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventJSON{plainEvent(e), float64(e.Elapsed.Microseconds()) / 1000})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *Event) UnmarshalJSON(b []byte) error {
	var v eventJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Event(v.plainEvent)
	if math.IsNaN(v.ElapsedMS) || math.Abs(v.ElapsedMS) > float64(math.MaxInt64/int64(time.Millisecond)) {
		return fmt.Errorf("elapsed_ms %v out of range", v.ElapsedMS)
	}
	e.Elapsed = time.Duration(math.Round(v.ElapsedMS*1000)) * time.Microsecond
	return nil
}

// Writer appends events to a trace directory. It is safe for concurrent
// use. The caller must call Close.
type Writer struct {
	dir string
	now func() time.Time

	mu     sync.Mutex
	file   *os.File  // events.jsonl
	out    io.Writer // where lines go: file, or a test's writer
	seq    int       // the highest Seq written
	err    error     // the first failed write; no write follows it
	closed bool
	// deferSync, set by DeferShotSync, syncs each screenshot file on a
	// goroutine of its own; unsynced holds their outcomes until SyncShots
	// (or Close) waits for them.
	deferSync bool
	unsynced  []chan error
	sync      func(name string) error // syncFile; tests replace it
}

// Create makes dir (and its parents) with an empty events.jsonl and a shots
// directory, and returns a Writer for it. It fails if dir already holds a
// trace, so that two runs never mix.
func Create(dir string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Join(dir, ShotsDir), 0o755); err != nil {
		return nil, fmt.Errorf("create trace %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create trace %s: %w", dir, err)
	}
	return &Writer{dir: dir, now: time.Now, file: f, out: f, sync: syncFile}, nil
}

// Dir returns the trace directory.
func (w *Writer) Dir() string { return w.dir }

// Write appends e as one line. A zero Seq becomes one more than the highest
// written so far, and a zero Time becomes now. The line goes to the file in a
// single write, so concurrent Writes never interleave.
//
// If the disk refuses a line (it is full, say), Write returns that error and
// every later Write fails with it too, so that nothing follows a line that
// may be half-written. An event that cannot be encoded (Raw that is not
// JSON, an Action of an invalid Kind) is refused without harming the Writer.
func (w *Writer) Write(e Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("write trace event %s: %w", e.Type, ErrClosed)
	}
	if w.err != nil {
		return fmt.Errorf("write trace event %s: stopped after an earlier failure: %w", e.Type, w.err)
	}
	if e.Seq == 0 {
		e.Seq = w.seq + 1
	}
	if e.Time.IsZero() {
		e.Time = w.now()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode trace event %d (%s): %v", e.Seq, e.Type, err)
	}
	line = append(line, '\n')
	n, err := w.out.Write(line)
	if err == nil && n != len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("write trace event %d (%s) to %s: %w", e.Seq, e.Type, w.dir, err)
		return w.err
	}
	w.seq = max(w.seq, e.Seq)
	return nil
}

// WriteShot saves s as shots/<frame id>.<png|jpg> and returns that path,
// relative to the trace directory and with forward slashes, for an Event's
// Shot. The file appears whole or not at all: it is written under a
// temporary name, synced and renamed. Writing the same frame again replaces
// the file. A failed WriteShot does not stop later Writes.
func (w *Writer) WriteShot(s screen.Shot) (string, error) {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return "", fmt.Errorf("write screenshot %q: %w", s.Frame.ID, ErrClosed)
	}
	name, err := shotName(s)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(w.dir, ShotsDir)
	w.mu.Lock()
	deferSync, sync := w.deferSync, w.sync
	w.mu.Unlock()
	if err := writeFileAtomic(dir, name, s.Data, !deferSync); err != nil {
		return "", fmt.Errorf("write screenshot %s: %w", name, err)
	}
	if deferSync {
		synced := make(chan error, 1)
		file := filepath.Join(dir, name)
		go func() { synced <- sync(file) }()
		w.mu.Lock()
		w.unsynced = append(w.unsynced, synced)
		w.mu.Unlock()
	}
	return path.Join(ShotsDir, name), nil
}

// DeferShotSync makes later WriteShots return once their file is in
// place, and sync it to disk on a goroutine of its own; SyncShots (or
// Close) waits for that. A caller that must not acknowledge a screenshot
// before it is on disk calls SyncShots first; the sync runs meanwhile, and
// alongside other writes (a database commit). Until then, a crash of the
// machine (not of the process) may leave the file empty or lose it. As
// without DeferShotSync, the directory entries are synced by Close.
func (w *Writer) DeferShotSync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deferSync = true
}

// SyncShots returns once the screenshot files written since DeferShotSync
// are synced to disk (the syncs started by WriteShot are done), with their
// errors.
func (w *Writer) SyncShots() error {
	w.mu.Lock()
	pending := w.unsynced
	w.unsynced = nil
	w.mu.Unlock()
	var err error
	for _, synced := range pending {
		err = errors.Join(err, <-synced)
	}
	if err != nil {
		return fmt.Errorf("sync screenshots of %s: %w", w.dir, err)
	}
	return nil
}

func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Close syncs events.jsonl and the directory entries to disk and closes the
// file. Later Writes fail with ErrClosed; a second Close does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	pending := w.unsynced
	w.unsynced = nil
	err := w.file.Sync()
	for _, synced := range pending {
		if serr := <-synced; err == nil {
			err = serr
		}
	}
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	for _, d := range []string{filepath.Join(w.dir, ShotsDir), w.dir} {
		if serr := syncDir(d); err == nil {
			err = serr
		}
	}
	if err != nil {
		return fmt.Errorf("close trace %s: %w", w.dir, err)
	}
	return nil
}

// shotName returns the file name for s, refusing frame ids that are not
// plain file names.
func shotName(s screen.Shot) (string, error) {
	id := s.Frame.ID
	if !validID(id) {
		return "", fmt.Errorf("write screenshot: frame id %q: want 1 to 128 letters, digits, '_', '-' or '.', not starting with '.'", id)
	}
	if len(s.Data) == 0 {
		return "", fmt.Errorf("write screenshot %s: no image data", id)
	}
	ext := imageExt(s.Frame.Format, s.Data)
	if ext == "" {
		return "", fmt.Errorf("write screenshot %s: format %q and data are neither PNG nor JPEG", id, s.Frame.Format)
	}
	return id + "." + ext, nil
}

// imageExt names the file extension for a screenshot, trusting f and
// falling back to the data's signature.
func imageExt(f screen.Format, data []byte) string {
	switch f {
	case screen.PNG:
		return "png"
	case screen.JPEG:
		return "jpg"
	}
	switch http.DetectContentType(data) {
	case "image/png":
		return "png"
	case "image/jpeg":
		return "jpg"
	}
	return ""
}

func validID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// writeFileAtomic writes dir/name through a temporary file and a rename,
// so that readers see the old file or the whole new one; with sync, the
// temporary file is synced to disk before the rename.
func writeFileAtomic(dir, name string, data []byte, sync bool) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, name))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Read returns the events of the trace in dir, in file order.
//
// A last line that does not decode is the unfinished write of a crashed
// writer: Read returns every event before it together with an error that
// wraps ErrTruncated and says how much was dropped. Any other bad line is
// an error wrapping ErrCorrupt, and no events are returned.
func Read(dir string) ([]Event, error) {
	b, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	return decode(b, filepath.Join(dir, EventsFile))
}

func decode(b []byte, name string) ([]Event, error) {
	var evs []Event
	for line := 1; len(b) > 0; line++ {
		var l []byte
		last := false
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			l, b, last = b, nil, true
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var e Event
		err := json.Unmarshal(l, &e)
		if err == nil {
			err = e.check()
		}
		if err != nil {
			if last {
				return evs, fmt.Errorf("read trace %s: dropped %d bytes of line %d after %d complete events: %w",
					name, len(l), line, len(evs), ErrTruncated)
			}
			return nil, fmt.Errorf("read trace %s: line %d: %w: %v", name, line, ErrCorrupt, err)
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// check rejects a decoded event that could not be written again.
func (e Event) check() error {
	for _, a := range []actions.Action{e.Action, e.Mapped.Action} {
		if a.Kind == actions.KindInvalid && !reflect.ValueOf(a).IsZero() {
			return errors.New("an action without a kind")
		}
	}
	return nil
}
