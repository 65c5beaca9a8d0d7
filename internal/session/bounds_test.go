package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/store"
)

// fakes opens in-memory displays and counts them.
type fakes struct {
	mu     sync.Mutex
	opened []*screentest.Fake
	closed int
	fail   error                     // the next opens fail with it
	hook   func(screen.Mapped) error // the displays' Fail hook
}

type fakeDisplay struct {
	*screentest.Fake
	f *fakes
}

func (d fakeDisplay) Close(context.Context) error {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	d.f.closed++
	return nil
}

func (f *fakes) open(_ context.Context, s Spec) (Display, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	d := &screentest.Fake{Viewport: s.Display.Size(), DPR: s.Display.DPR, Fail: f.hook}
	f.opened = append(f.opened, d)
	return fakeDisplay{d, f}, nil
}

func (f *fakes) counts() (opened, closed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.opened), f.closed
}

func (f *fakes) last() *screentest.Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened[len(f.opened)-1]
}

// boundsEnv is a Manager on SQLite in dir with in-memory displays.
type boundsEnv struct {
	t     *testing.T
	dir   string
	st    store.Store
	m     *Manager
	disps *fakes
}

func newBoundsEnv(t *testing.T, dir string, max int) *boundsEnv {
	t.Helper()
	st, err := store.Open(t.Context(), filepath.Join(dir, "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &boundsEnv{t: t, dir: dir, st: st, disps: &fakes{}}
	e.m, err = New(Config{Store: st, Dir: filepath.Join(dir, "sessions"), ApprovalTimeout: time.Hour,
		NewDisplay: e.disps.open, MaxSessions: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.m.Close(context.Background()) })
	return e
}

// executor creates an executor session of Anthropic calls.
func (e *boundsEnv) executor(spec Spec) *Session {
	e.t.Helper()
	spec.Provider = "anthropic"
	s, err := e.m.Create(e.t.Context(), KindExecutor, spec, "test")
	if err != nil {
		e.t.Fatalf("Create(executor) = %v", err)
	}
	if _, err := s.First(e.t.Context()); err != nil {
		e.t.Fatalf("First() = %v", err)
	}
	return s
}

func toolUse(id string, input map[string]any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": "computer", "input": input})
	return b
}

func shotCall(id string) json.RawMessage { return toolUse(id, map[string]any{"action": "screenshot"}) }

// call posts raw and waits for its result.
func call(t *testing.T, s *Session, raw json.RawMessage) ExecResult {
	t.Helper()
	r, err := s.Call(t.Context(), raw, time.Minute)
	if err != nil {
		t.Fatalf("Call(%.80s) = %v", raw, err)
	}
	if !r.Done {
		t.Fatalf("Call(%.80s) = not done after a minute", raw)
	}
	return r
}

// imageOf returns the base64 image data of an Anthropic tool_result.
func imageOf(t *testing.T, native json.RawMessage) string {
	t.Helper()
	var tr struct {
		Content []struct {
			Type   string `json:"type"`
			Source struct {
				Data string `json:"data"`
			} `json:"source"`
		} `json:"content"`
	}
	if err := json.Unmarshal(native, &tr); err != nil {
		t.Fatalf("tool_result %s: %v", native, err)
	}
	for _, c := range tr.Content {
		if c.Type == "image" {
			return c.Source.Data
		}
	}
	return ""
}

// An executor session keeps the results of its latest MaxRetainedCalls
// calls: a retry of one of them, and GET /calls/:id, answer with its
// screenshot (read back from the trace); an older call's id is ErrGone,
// posted again or asked for, and does not run again. Once the session is
// stopped, nothing of it stays in the Manager.
func TestExecutorRetainsLatestResults(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 0)
	s := e.executor(Spec{})
	n := MaxRetainedCalls + 4
	var last ExecResult
	for i := range n {
		last = call(t, s, shotCall(fmt.Sprintf("c%d", i)))
	}
	if imageOf(t, last.Native) == "" {
		t.Fatalf("the last call's result has no image: %s", last.Native)
	}
	performed := len(e.disps.last().Performed())

	for i := range n {
		id := fmt.Sprintf("c%d", i)
		r, err := s.CallResult(t.Context(), id, 0)
		retained := i >= n-MaxRetainedCalls
		switch {
		case retained && (err != nil || !r.Done || imageOf(t, r.Native) == ""):
			t.Errorf("CallResult(%s) = %+v, %v; want its result with the screenshot", id, r.Done, err)
		case !retained && !errors.Is(err, ErrGone):
			t.Errorf("CallResult(%s) = %v, want ErrGone", id, err)
		}
		r, err = s.Call(t.Context(), shotCall(id), 0)
		switch {
		case retained && (err != nil || !r.Done):
			t.Errorf("retry of %s = %+v, %v; want its result", id, r.Done, err)
		case !retained && !errors.Is(err, ErrGone):
			t.Errorf("retry of %s = %v, want ErrGone", id, err)
		}
	}
	if _, err := s.CallResult(t.Context(), "never-posted", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("CallResult(never-posted) = %v, want ErrNotFound", err)
	}
	if got := len(e.disps.last().Performed()); got != performed {
		t.Errorf("the display performed %d more actions for retries; want none", got-performed)
	}
	s.exec.mu.Lock()
	held := len(s.exec.byID)
	s.exec.mu.Unlock()
	if held > MaxRetainedCalls {
		t.Errorf("the session holds %d calls, want at most %d", held, MaxRetainedCalls)
	}

	if err := s.Stop(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	if _, closed := e.disps.counts(); closed != 1 {
		t.Errorf("displays closed after Stop = %d, want 1 (Stop waits for it)", closed)
	}
	if _, err := s.CallResult(t.Context(), fmt.Sprintf("c%d", n-1), 0); !errors.Is(err, ErrGone) {
		t.Errorf("CallResult after Stop = %v, want ErrGone", err)
	}
	e.m.mu.Lock()
	_, kept := e.m.sessions[s.ID()]
	e.m.mu.Unlock()
	if kept {
		t.Errorf("the Manager still holds the stopped session")
	}
	if open, _ := e.m.Open(); open != 0 {
		t.Errorf("Open() after Stop = %d, want 0", open)
	}
	got, err := e.m.Get(s.ID())
	if err != nil || got == s || got.Record().Status != store.StatusStopped {
		t.Fatalf("Get(stopped) = %p %v; want a session read from the store, stopped", got, err)
	}
	if got.LastSeq() != s.LastSeq() || got.LastSeq() == 0 {
		t.Errorf("LastSeq of the stopped session = %d, want %d", got.LastSeq(), s.LastSeq())
	}
	evs, _ := got.Events(0)
	if int64(len(evs)) != got.LastSeq() {
		t.Errorf("Events(0) of the stopped session = %d events, want %d", len(evs), got.LastSeq())
	}
	if _, err := got.Call(t.Context(), shotCall("after"), 0); !errors.Is(err, ErrConflict) {
		t.Errorf("Call on the stopped session = %v, want ErrConflict", err)
	}
	if err := got.Takeover(t.Context(), true, "test"); !errors.Is(err, ErrConflict) {
		t.Errorf("Takeover of the stopped session = %v, want ErrConflict", err)
	}
	if opened, _ := e.disps.counts(); opened != 1 {
		t.Errorf("displays opened = %d, want 1 (a stopped session opens none)", opened)
	}
}

// Calls posted while the loop waits for a human queue up to
// MaxQueuedCalls; the next is ErrTooManyCalls, and nothing of it stays.
func TestExecutorQueueBound(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 0)
	s := e.executor(Spec{Approvals: ApprovalSpec{Supervise: SuperviseAll}})
	click := toolUse("held", map[string]any{"action": "left_click", "coordinate": []int{10, 10}})
	if r, err := s.Call(t.Context(), click, 0); err != nil || r.Done {
		t.Fatalf("Call(click) = %+v, %v; want it waiting", r, err)
	}
	waitEvent(t, s, EventPermissionRequest) // the loop holds it: the queue is empty
	for i := range MaxQueuedCalls {
		if r, err := s.Call(t.Context(), shotCall(fmt.Sprintf("q%d", i)), 0); err != nil || r.Done {
			t.Fatalf("Call(q%d) = %+v, %v; want it queued", i, r, err)
		}
	}
	_, err := s.Call(t.Context(), shotCall("one-too-many"), 0)
	if !errors.Is(err, ErrTooManyCalls) {
		t.Fatalf("Call past the queue = %v, want ErrTooManyCalls", err)
	}
	if _, err := s.CallResult(t.Context(), "one-too-many", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("CallResult(refused call) = %v, want ErrNotFound", err)
	}
	if err := s.Stop(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
}

// MaxSessions bounds the sessions with an open display: the next one is
// ErrTooManySessions and leaves nothing behind; a stopped one makes room.
func TestMaxSessions(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 2)
	a := e.executor(Spec{})
	e.executor(Spec{})
	_, err := e.m.Create(t.Context(), KindExecutor, Spec{Provider: "anthropic"}, "test")
	if !errors.Is(err, ErrTooManySessions) || !strings.Contains(err.Error(), "2 of 2") {
		t.Fatalf("Create past MaxSessions = %v, want ErrTooManySessions saying 2 of 2", err)
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, "sessions"))
	if len(entries) != 2 {
		t.Errorf("session directories = %d, want 2 (the refused session makes none)", len(entries))
	}
	recs, _ := e.st.Sessions(t.Context())
	if len(recs) != 2 {
		t.Errorf("stored sessions = %d, want 2", len(recs))
	}
	if opened, _ := e.disps.counts(); opened != 2 {
		t.Errorf("displays opened = %d, want 2", opened)
	}
	if err := a.Stop(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	e.executor(Spec{})
	if open, max := e.m.Open(); open != 2 || max != 2 {
		t.Errorf("Open() = %d, %d; want 2, 2", open, max)
	}

	// A display that cannot open gives its place back.
	e.disps.mu.Lock()
	e.disps.fail = errors.New("no browser")
	e.disps.mu.Unlock()
	e2 := newBoundsEnv(t, t.TempDir(), 1)
	e2.disps = e.disps
	e2.m.cfg.NewDisplay = e.disps.open
	if _, err := e2.m.Create(t.Context(), KindExecutor, Spec{Provider: "anthropic"}, "test"); err == nil {
		t.Fatal("Create with a display that fails = nil error")
	}
	if open, _ := e2.m.Open(); open != 0 {
		t.Errorf("Open() after a display failed to open = %d, want 0", open)
	}
}

func TestMaxSessionsFor(t *testing.T) {
	tests := []struct {
		meminfo string
		want    int
	}{
		{"MemTotal:       24683520 kB\nMemFree: 1 kB\n", 115},
		{"MemFree: 1 kB\nMemTotal: 1048576 kB\n", 2},                   // 1 GiB: the floor
		{"MemTotal: 4294967296 kB\n", 512},                             // 4 TiB: the ceiling
		{"MemTotal: lots\n", 16},                                       // unreadable
		{"nothing here\n", 16},                                         //
		{"MemTotal:       2097152 kB\n", (1 << 30) / MemoryPerSession}, // 2 GiB
	}
	for _, tt := range tests {
		if got := maxSessionsFor([]byte(tt.meminfo)); got != tt.want {
			t.Errorf("maxSessionsFor(%q) = %d, want %d", tt.meminfo, got, tt.want)
		}
	}
	if n := DefaultMaxSessions(); n < 2 || n > 512 {
		t.Errorf("DefaultMaxSessions() = %d, want 2..512", n)
	}
}

// What is stored of a call is what it means: its provider's fields, with
// long values left out whole, within maxRawBytes.
func TestBoundRaw(t *testing.T) {
	mb := strings.Repeat("j", 1<<20)
	many := map[string]any{"action": "screenshot"}
	for i := range 200 {
		many[fmt.Sprintf("k%03d", i)] = i
	}
	wide := map[string]any{"action": "screenshot"}
	for i := range 60 {
		wide[fmt.Sprintf("k%02d", i)] = strings.Repeat("w", 1000)
	}
	deep := any("bottom")
	for range 20 {
		deep = map[string]any{"d": deep}
	}
	tests := []struct {
		name     string
		provider string
		call     map[string]any
		want     []string // in the stored form
		not      []string // not in it
	}{
		{"unknown top-level field", "anthropic",
			map[string]any{"type": "tool_use", "id": "a", "name": "computer", "input": map[string]any{"action": "screenshot"}, "junk": mb},
			[]string{`"id":"a"`, `"action":"screenshot"`}, []string{"junk", "jjjj"}},
		{"long string in input", "anthropic",
			map[string]any{"type": "tool_use", "id": "a", "name": "computer", "input": map[string]any{"action": "screenshot", "junk": mb}},
			[]string{`"junk":"[1048576 bytes left out]"`}, []string{"jjjj"}},
		{"many fields", "anthropic",
			map[string]any{"type": "tool_use", "id": "a", "name": "computer", "input": many},
			[]string{`"spotter_left_out":"137 more fields"`}, []string{"k199"}},
		{"too wide: only what pairs the result", "anthropic",
			map[string]any{"type": "tool_use", "id": "a", "name": "computer", "input": wide},
			[]string{`"id":"a"`, `"name":"computer"`}, []string{"wwww", "input"}},
		{"too deep", "anthropic",
			map[string]any{"type": "tool_use", "id": "a", "name": "computer", "input": deep},
			[]string{"nested too deep"}, []string{"bottom"}},
		{"openai item", "openai",
			map[string]any{"type": "computer_call", "call_id": "c", "actions": []any{map[string]any{"type": "screenshot"}}, "pending_safety_checks": []any{}, "extra": 1},
			[]string{`"call_id":"c"`, `"pending_safety_checks":[]`}, []string{"extra"}},
		{"gemini part", "gemini",
			map[string]any{"functionCall": map[string]any{"id": "g", "name": "click_at", "args": map[string]any{"x": 1}, "junk": 2}, "thoughtSignature": mb},
			[]string{`"functionCall":{"args":{"x":1},"id":"g","name":"click_at"}`}, []string{"junk", "thoughtSignature"}},
		{"huge number", "anthropic",
			map[string]any{"type": "tool_use", "id": "a", "input": map[string]any{"n": json.Number(strings.Repeat("9", 500))}},
			[]string{"a number of 500 digits left out"}, []string{"9999"}},
		{"text with HTML characters is written as Go writes it", "anthropic",
			map[string]any{"type": "tool_use", "id": "a", "input": map[string]any{"action": "type", "text": "a<b&c"}},
			[]string{`a\u003cb\u0026c`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.call)
			if err != nil {
				t.Fatal(err)
			}
			got := boundRaw(tt.provider, raw)
			if !json.Valid(got) || len(got) > maxRawBytes {
				t.Fatalf("boundRaw = %d bytes, valid %v; want valid JSON within %d", len(got), json.Valid(got), maxRawBytes)
			}
			for _, w := range tt.want {
				if !bytes.Contains(got, []byte(w)) {
					t.Errorf("boundRaw = %.300s, want it to hold %s", got, w)
				}
			}
			for _, w := range tt.not {
				if bytes.Contains(got, []byte(w)) {
					t.Errorf("boundRaw = %.300s, want no %s", got, w)
				}
			}
		})
	}
	if got := boundRaw("anthropic", json.RawMessage(`not json`)); string(got) != `"not json"` {
		t.Errorf("boundRaw(not json) = %s", got)
	}
}

// A call whose batch is over the action limits is answered with the
// limit's error, and none of its text is kept.
func TestMeaningRefusesOversizedActions(t *testing.T) {
	text := strings.Repeat("t", 20000)
	raw := toolUse("a", map[string]any{"action": "type", "text": text})
	c, err := anthropic.DecodeCall(raw, screen.Size{W: 1280, H: 800})
	if err != nil {
		t.Fatalf("DecodeCall: %v", err)
	}
	got := meaning("anthropic", c)
	if got.DecodeErr == nil || !errors.Is(got.DecodeErr, actions.ErrInvalid) || len(got.Actions) != 0 {
		t.Fatalf("meaning(20000-byte text) = err %v, %d actions; want the limit's error and no actions", got.DecodeErr, len(got.Actions))
	}
	if bytes.Contains(got.Raw, []byte("tttt")) {
		t.Errorf("the stored raw call holds the text: %.200s", got.Raw)
	}
}

// A call with a megabyte of junk inside and outside its input leaves no
// junk in any record: the store's rows and the trace.
func TestJunkIsNotStored(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 0)
	s := e.executor(Spec{})
	junk := strings.Repeat("J", 400<<10)
	for i := range 5 {
		var v map[string]any
		_ = json.Unmarshal(shotCall(fmt.Sprintf("j%d", i)), &v)
		v["junk"] = junk
		v["input"].(map[string]any)["junk"] = junk
		raw, _ := json.Marshal(v)
		call(t, s, raw)
	}
	if err := s.Stop(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	var rows [][]byte
	ctx := t.Context()
	evs, _ := e.st.Events(ctx, s.ID(), 0)
	for _, ev := range evs {
		rows = append(rows, ev.Data)
	}
	msgs, _ := e.st.Messages(ctx, s.ID())
	for _, m := range msgs {
		rows = append(rows, m.Content)
	}
	calls, _ := e.st.ToolCalls(ctx, s.ID())
	for _, c := range calls {
		rows = append(rows, c.Input, c.Result)
	}
	rec, _ := e.st.Session(ctx, s.ID())
	rows = append(rows, rec.State, rec.Config)
	traces, _ := filepath.Glob(filepath.Join(s.Dir(), "t*", "events.jsonl"))
	for _, f := range traces {
		b, _ := os.ReadFile(f)
		rows = append(rows, b)
	}
	total := 0
	for _, r := range rows {
		total += len(r)
		if bytes.Contains(r, []byte("JJJJ")) {
			t.Errorf("a record holds the junk: %.200s", r)
		}
	}
	if total > 64<<10 {
		t.Errorf("the records of 5 calls add up to %d bytes, want under 64 KiB", total)
	}
}

func TestScrub(t *testing.T) {
	m := &Manager{}
	m.dataDirs = []string{"/srv/spotter-data/sessions", "/srv/spotter-data"}
	m.relDirs = []string{"data/sessions", "data"}
	tests := []struct{ in, want string }{
		{"create trace /srv/spotter-data/sessions/s1/t3: open /srv/spotter-data/sessions/s1/t3/events.jsonl: file exists",
			"create trace s1/t3: open s1/t3/events.jsonl: file exists"},
		{"open /srv/spotter-data/spotter.db: locked", "open spotter.db: locked"},
		{"launch /usr/lib/chromium/chromium: no such file", "launch [path]: no such file"},
		{"create trace data/sessions/s1/t2: exists", "create trace s1/t2: exists"},
		{"navigate https://example.com/a/b/c failed", "navigate https://example.com/a/b/c failed"},
		{"point (10, 20) is outside", "point (10, 20) is outside"},
	}
	for _, tt := range tests {
		if got := m.scrub(tt.in); got != tt.want {
			t.Errorf("scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
