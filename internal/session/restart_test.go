package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/store"
)

// modelFunc is a harness.Model of one function.
type modelFunc func(ctx context.Context, in harness.Input) (harness.Turn, error)

func (f modelFunc) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	return f(ctx, in)
}

func (e *boundsEnv) withModel(m harness.Model) {
	e.m.cfg.NewModel = func(context.Context, Spec, screen.Size) (harness.Model, error) { return m, nil }
}

// restart closes e's Manager as a shutdown does (runs keep their state,
// as after kill -9 in the middle of them) and restores a new one on the
// same store and directory.
func (e *boundsEnv) restart(model harness.Model) *boundsEnv {
	e.t.Helper()
	if err := e.m.Close(context.Background()); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e2 := &boundsEnv{t: e.t, dir: e.dir, st: e.st, disps: &fakes{}}
	m, err := New(Config{Store: e.st, Dir: filepath.Join(e.dir, "sessions"), ApprovalTimeout: time.Hour,
		NewDisplay: e2.disps.open})
	if err != nil {
		e.t.Fatal(err)
	}
	e2.m = m
	e.t.Cleanup(func() { m.Close(context.Background()) })
	if model != nil {
		e2.withModel(model)
	}
	if err := m.Restore(e.t.Context()); err != nil {
		e.t.Fatalf("Restore() = %v", err)
	}
	return e2
}

// lastStop returns the data of a session's latest turn_stop, waiting for
// it.
func lastStop(t *testing.T, s *Session) TurnStopEvent {
	t.Helper()
	var ts TurnStopEvent
	_ = json.Unmarshal(waitEvent(t, s, EventTurnStop).Data, &ts)
	return ts
}

// A run the process died in before the model's first reply starts again
// after the restart, in a trace directory of its own: it used to reuse
// the directory, whose events.jsonl exists, and fail with the server's
// path in the error.
func TestRestoreRunWithoutATurn(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 0)
	asked := make(chan struct{})
	e.withModel(modelFunc(func(ctx context.Context, in harness.Input) (harness.Turn, error) {
		close(asked)
		<-ctx.Done() // the process dies in this call
		return harness.Turn{}, context.Cause(ctx)
	}))
	s, err := e.m.Create(t.Context(), KindAgent, Spec{Model: ModelSpec{Provider: "anthropic"},
		Messages: []InMessage{{Role: "user", Content: json.RawMessage(`"do it"`)}}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	<-asked
	var tasks []string
	e2 := e.restart(modelFunc(func(ctx context.Context, in harness.Input) (harness.Turn, error) {
		tasks = append(tasks, in.Task)
		return harness.Turn{Text: "done", Stop: harness.StopEndTurn}, nil
	}))
	s2, err := e2.m.Get(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if ts := lastStop(t, s2); ts.StopReason != StopEndTurn {
		t.Fatalf("turn_stop after the restart = %+v, want end_turn", ts)
	}
	if st := s2.Record().Status; st != store.StatusIdle {
		t.Errorf("status = %q, want idle", st)
	}
	if len(tasks) != 1 || tasks[0] != "do it" {
		t.Errorf("the model was asked with tasks %q, want the task once", tasks)
	}
	for _, d := range []string{"t1", "t2"} {
		if _, err := os.Stat(filepath.Join(s2.Dir(), d, "events.jsonl")); err != nil {
			t.Errorf("trace %s: %v", d, err)
		}
	}
}

// After a restart, the approvals that nothing waits for (a stopped
// session's, an idle session's) are closed with a reason, and a person
// can no longer approve them.
func TestRestoreClosesUnawaitedApprovals(t *testing.T) {
	dir := t.TempDir()
	e := newBoundsEnv(t, dir, 0)
	now := time.Now().UTC()
	for _, s := range []struct{ id, status string }{{"s-stopped", store.StatusStopped}, {"s-idle", store.StatusIdle}} {
		if err := e.st.CreateSession(t.Context(), store.Session{ID: s.id, Kind: KindAgent, Status: s.status,
			Config: json.RawMessage(`{}`), Created: now, Updated: now}); err != nil {
			t.Fatal(err)
		}
		if err := e.st.PutApproval(t.Context(), store.Approval{ID: "ap-" + s.id, Session: s.id, CallID: "c1", Rule: "confirm",
			Reason: "r", Request: json.RawMessage(`{}`), Status: store.ApprovalPending, Created: now,
			Deadline: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	e2 := e.restart(nil)
	if ps := e2.m.q.Pending(); len(ps) != 0 {
		t.Errorf("pending after Restore = %+v, want none", ps)
	}
	for _, id := range []string{"ap-s-stopped", "ap-s-idle"} {
		a, err := e.st.Approval(t.Context(), id)
		if err != nil || a.Status == store.ApprovalPending || !strings.Contains(string(a.Decision), "without this decision") {
			t.Errorf("approval %s after Restore = %s %s, %v; want closed with a reason", id, a.Status, a.Decision, err)
		}
		if err := e2.m.Decide(t.Context(), id, Decision{Decision: "approve"}, "ann"); !errors.Is(err, ErrConflict) {
			t.Errorf("Decide(%s) after Restore = %v, want ErrConflict", id, err)
		}
	}
}

// An executor session survives a restart: the results of its latest calls
// answer retries (older ids stay gone), the call that waited for a human
// still waits for the same approval, and the next call runs on a browser
// relaunched at the last page, whose first screenshot says so.
func TestExecutorSurvivesRestart(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 0)
	s := e.executor(Spec{StartURL: "https://shop.test/", Approvals: ApprovalSpec{Supervise: SuperviseAll}})
	n := MaxRetainedCalls + 2
	before := map[string]ExecResult{}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		before[id] = call(t, s, shotCall(id))
	}
	held := toolUse("held", map[string]any{"action": "left_click", "coordinate": []int{10, 10}})
	if r, err := s.Call(t.Context(), held, 0); err != nil || r.Done {
		t.Fatalf("Call(held) = %+v, %v; want it waiting", r, err)
	}
	var pr PermissionRequest
	_ = json.Unmarshal(waitEvent(t, s, EventPermissionRequest).Data, &pr)

	e2 := e.restart(nil)
	s2, err := e2.m.Get(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if st := s2.Record().Status; st != store.StatusRunning {
		t.Fatalf("status after the restart = %q (%s), want running", st, s2.Record().Error)
	}
	last := fmt.Sprintf("c%d", n-1)
	r, err := s2.Call(t.Context(), shotCall(last), 0)
	if err != nil || !r.Done || r.Frame.ID != before[last].Frame.ID || imageOf(t, r.Native) != imageOf(t, before[last].Native) {
		t.Errorf("retry of %s after the restart = frame %q done %v, %v; want its result from before (frame %q)",
			last, r.Frame.ID, r.Done, err, before[last].Frame.ID)
	}
	if _, err := s2.CallResult(t.Context(), "c0", 0); !errors.Is(err, ErrGone) {
		t.Errorf("CallResult(c0) after the restart = %v, want ErrGone", err)
	}
	if _, err := s2.Call(t.Context(), shotCall("c1"), 0); !errors.Is(err, ErrGone) {
		t.Errorf("retry of c1 after the restart = %v, want ErrGone (not run again)", err)
	}
	r, err = s2.CallResult(t.Context(), "held", 0)
	if err != nil || r.Done || r.ApprovalID != pr.ApprovalID {
		t.Fatalf("CallResult(held) after the restart = %+v, %v; want it waiting for %s", r, err, pr.ApprovalID)
	}
	if err := e2.m.Decide(t.Context(), pr.ApprovalID, Decision{Decision: "approve"}, "ann"); err != nil {
		t.Fatalf("Decide = %v", err)
	}
	r, err = s2.CallResult(t.Context(), "held", time.Minute)
	if err != nil || !r.Done || r.Error != "" {
		t.Fatalf("CallResult(held) once approved = %+v, %v; want done", r, err)
	}
	if !strings.Contains(string(r.Native), "The server restarted") {
		t.Errorf("the first result after the restart = %.300s, want the restart's note", r.Native)
	}
	if len(e2.disps.opened) != 1 || len(e2.disps.opened[0].Performed()) < 2 {
		t.Errorf("after the restart: %d displays, want 1 that navigated and clicked", len(e2.disps.opened))
	}
	if r.Frame.ID <= before[last].Frame.ID {
		t.Errorf("frame id after the restart = %q, want one after %q (ids name one screenshot)", r.Frame.ID, before[last].Frame.ID)
	}
	call(t, s2, shotCall("next"))
}

// A takeover outlives a restart: the resumed call waits for the
// hand-back, the operator's input works at once, and the model is told
// that a human acted.
func TestTakeoverSurvivesRestart(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 0)
	s := e.executor(Spec{StartURL: "https://shop.test/"})
	if err := s.Takeover(t.Context(), true, "ann"); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Call(t.Context(), shotCall("during"), 0); err != nil || r.Done {
		t.Fatalf("Call during the takeover = %+v, %v; want it waiting", r, err)
	}
	waitEvent(t, s, EventToolCall)

	e2 := e.restart(nil)
	s2, err := e2.m.Get(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	click := actions.Action{Kind: actions.Click, At: actions.Pt(5, 5), HasAt: true}
	if _, err := s2.Input(t.Context(), click, "ann"); err != nil {
		t.Fatalf("Input after the restart = %v, want the takeover still active", err)
	}
	if r, err := s2.CallResult(t.Context(), "during", 0); err != nil || r.Done {
		t.Fatalf("CallResult(during) before the hand-back = %+v, %v; want it waiting", r, err)
	}
	if err := s2.Takeover(t.Context(), false, "ann"); err != nil {
		t.Fatal(err)
	}
	r, err := s2.CallResult(t.Context(), "during", time.Minute)
	if err != nil || !r.Done {
		t.Fatalf("CallResult(during) after the hand-back = %+v, %v", r, err)
	}
	if !strings.Contains(string(r.Native), "human operator") {
		t.Errorf("result after the hand-back = %.300s, want the note that a human acted", r.Native)
	}
}

// A browser that dies under an executor session is started anew at the
// last page, up to maxRelaunches times within relaunchWindow: the call it
// died in says so, and the next one works. Past that the session ends,
// its display closed, with a reason that names no path.
func TestDisplayRelaunch(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 0)
	s := e.executor(Spec{StartURL: "https://shop.test/"})
	call(t, s, shotCall("before"))
	for i := range maxRelaunches {
		e.disps.last().Kill()
		var raw json.RawMessage
		if i%2 == 0 {
			raw = shotCall(fmt.Sprintf("k%d", i))
		} else {
			raw = toolUse(fmt.Sprintf("k%d", i), map[string]any{"action": "left_click", "coordinate": []int{10, 10}})
		}
		// A failed click's Anthropic result carries no image (nothing
		// ran), but the call got its fresh screenshot (Frame).
		r := call(t, s, raw)
		if !strings.Contains(string(r.Native), "started anew at https://shop.test/") || r.Frame.ID == "" ||
			(i%2 == 0 && imageOf(t, r.Native) == "") {
			t.Errorf("call %d after the browser died = %.300s, frame %q; want the note and a screenshot", i, r.Native, r.Frame.ID)
		}
		call(t, s, shotCall(fmt.Sprintf("after%d", i)))
	}
	opened, closed := e.disps.counts()
	if opened != maxRelaunches+1 || closed != maxRelaunches {
		t.Errorf("displays opened %d, closed %d; want %d and %d", opened, closed, maxRelaunches+1, maxRelaunches)
	}
	e.disps.last().Kill()
	_, err := s.Call(t.Context(), shotCall("too-many"), time.Minute)
	if !errors.Is(err, ErrConflict) || strings.Contains(err.Error(), e.dir) {
		t.Fatalf("Call once relaunches ran out = %v, want ErrConflict without paths", err)
	}
	if ts := lastStop(t, s); ts.StopReason != StopError {
		t.Errorf("turn_stop = %+v, want error", ts)
	}
	if _, closed := e.disps.counts(); closed != maxRelaunches+1 {
		t.Errorf("displays closed = %d, want all %d", closed, maxRelaunches+1)
	}
	if open, _ := e.m.Open(); open != 0 {
		t.Errorf("Open() after the session ended = %d, want 0", open)
	}
}
