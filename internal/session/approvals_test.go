package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/store"
)

// newManager is a Manager on a fresh SQLite store, without displays.
func newManager(t *testing.T, dir string) *Manager {
	t.Helper()
	st, err := store.Open(t.Context(), filepath.Join(dir, "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Store: st, Dir: dir, ApprovalTimeout: time.Hour,
		NewDisplay: func(context.Context, Spec) (Display, error) { return nil, errors.New("no displays here") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
		st.Close()
	})
	return m
}

// clickRules flag every click.
var clickRules = approvals.Rules{Rules: []approvals.Rule{{Name: "confirm", Kinds: []actions.Kind{actions.Click},
	Reason: "clicks need a human"}}}

// clickAt is a click request at (x, y) of a 100x100 frame.
func clickAt(t *testing.T, call string, x, y float64) harness.ApprovalRequest {
	a := actions.Action{Kind: actions.Click, At: actions.Point{X: x, Y: y}, HasAt: true}
	f := screen.Frame{ID: "f1", Viewport: screen.Size{W: 100, H: 100}, Sent: screen.Size{W: 100, H: 100},
		Capture: screen.Size{W: 100, H: 100}, DPR: 1, Clip: actions.Rect{Max: actions.Pt(100, 100)}}
	m, err := f.Map(a, screen.Image)
	if err != nil {
		t.Fatal(err)
	}
	return harness.ApprovalRequest{CallID: call, Action: a, Mapped: &m, Frame: f, ModelText: "clicking"}
}

// waitEvent reads a session's stream until an event of type typ.
func waitEvent(t *testing.T, s *Session, typ string) store.Event {
	t.Helper()
	return waitNth(t, s, typ, 1)
}

// waitNth reads a session's stream until the nth event of type typ.
func waitNth(t *testing.T, s *Session, typ string, n int) store.Event {
	t.Helper()
	var after int64
	for {
		evs, changed := s.Events(after)
		for _, e := range evs {
			after = e.Seq
			if e.Type == typ {
				if n--; n == 0 {
					return e
				}
			}
		}
		select {
		case <-changed:
		case <-t.Context().Done():
			t.Fatalf("no %s event", typ)
		}
	}
}

type approved struct {
	d   harness.Decision
	err error
}

// ask runs an Approver's Approve in a goroutine the test waits for.
func ask(t *testing.T, ctx context.Context, a harness.Approver, r harness.ApprovalRequest) <-chan approved {
	out := make(chan approved, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		d, err := a.Approve(ctx, r)
		out <- approved{d, err}
	})
	t.Cleanup(wg.Wait)
	return out
}

// A flagged action of an attached session is persisted, streamed
// (permission_request, after it is in the queue) and released by Decide;
// the decision is stored, audited and streamed.
func TestManagerApprovalFlow(t *testing.T) {
	m := newManager(t, t.TempDir())
	id, err := m.Attach(t.Context(), KindMCP, "test", "ann")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Get(id)
	ap, err := m.Approver(id, clickRules, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := ask(t, t.Context(), ap, clickAt(t, "c1", 30, 40))
	ev := waitEvent(t, s, EventPermissionRequest)
	var pr PermissionRequest
	if err := json.Unmarshal(ev.Data, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.ApprovalID == "" || pr.ToolCallID != "c1" || pr.Rule != "confirm" || pr.Marker == nil || pr.ModelText != "clicking" {
		t.Errorf("permission_request = %+v, want call c1, rule confirm, a marker and the model's words", pr)
	}
	a, err := m.st.Approval(t.Context(), pr.ApprovalID)
	if err != nil || a.Status != store.ApprovalPending {
		t.Fatalf("stored approval = %+v, %v; want it pending", a, err)
	}
	if err := m.Decide(t.Context(), pr.ApprovalID, Decision{Decision: "deny", Reason: "not now"}, "ann"); err != nil {
		t.Fatalf("Decide() = %v", err)
	}
	got := <-done
	if !errors.Is(got.err, harness.ErrDenied) || !strings.Contains(got.err.Error(), "not now") {
		t.Errorf("Approve() after a denial = %v, want ErrDenied with the reason", got.err)
	}
	var dec DecidedEvent
	if err := json.Unmarshal(waitEvent(t, s, EventApprovalDecided).Data, &dec); err != nil {
		t.Fatal(err)
	}
	want := DecidedEvent{ApprovalID: pr.ApprovalID, ToolCallID: "c1", Status: store.ApprovalDenied, By: "ann", Reason: "not now"}
	if diff := cmp.Diff(want, dec); diff != "" {
		t.Errorf("approval_decided (-want +got):\n%s", diff)
	}
	if a, _ := m.st.Approval(t.Context(), pr.ApprovalID); a.Status != store.ApprovalDenied || a.DecidedBy != "ann" {
		t.Errorf("stored approval = %+v, want denied by ann", a)
	}
	log, _ := m.st.AuditLog(t.Context(), id)
	if n := len(log); n == 0 || log[n-1].Action != "deny" || log[n-1].Subject != pr.ApprovalID {
		t.Errorf("audit log %+v: want the denial last", log)
	}
	// A second decision is a conflict, an unknown approval not found.
	if err := m.Decide(t.Context(), pr.ApprovalID, Decision{Decision: "approve"}, "bob"); !errors.Is(err, ErrConflict) {
		t.Errorf("Decide(decided) = %v, want ErrConflict", err)
	}
	if err := m.Decide(t.Context(), "ap_none", Decision{Decision: "approve"}, "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Decide(unknown) = %v, want ErrNotFound", err)
	}
	if err := m.Decide(t.Context(), pr.ApprovalID, Decision{Decision: "maybe"}, "bob"); !errors.Is(err, ErrBadRequest) {
		t.Errorf("Decide(bad decision) = %v, want ErrBadRequest", err)
	}
}

// A run that ends (not the server) gives up its request: it is denied by
// the system; Detach denies what an attached session left pending.
func TestManagerStoppedAndDetached(t *testing.T) {
	m := newManager(t, t.TempDir())
	id, _ := m.Attach(t.Context(), KindMCP, "test", "ann")
	s, _ := m.Get(id)
	ap, _ := m.Approver(id, clickRules, nil, nil)

	ctx, cancel := context.WithCancelCause(t.Context())
	done := ask(t, ctx, ap, clickAt(t, "c1", 10, 10))
	first := waitEvent(t, s, EventPermissionRequest)
	cancel(ErrStopped)
	if got := <-done; !errors.Is(got.err, harness.ErrDenied) || !strings.Contains(got.err.Error(), "stopped") {
		t.Errorf("Approve() of a stopped run = %v, want a denial saying it was stopped", got.err)
	}
	var pr PermissionRequest
	_ = json.Unmarshal(first.Data, &pr)
	if a, _ := m.st.Approval(t.Context(), pr.ApprovalID); a.Status != store.ApprovalExpired || a.DecidedBy != bySystem {
		t.Errorf("approval of a stopped run = %+v, want expired by system", a)
	}

	// Shutdown keeps it pending, for the next start.
	sctx, scancel := context.WithCancelCause(t.Context())
	done = ask(t, sctx, ap, clickAt(t, "c2", 10, 10))
	waitNth(t, s, EventPermissionRequest, 2)
	scancel(errShutdown)
	<-done
	if ps := m.q.Pending(); len(ps) != 1 || ps[0].CallID != "c2" {
		t.Fatalf("pending after shutdown = %+v, want c2's", ps)
	}
	if err := m.Detach(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if ps := m.q.Pending(); len(ps) != 0 {
		t.Errorf("pending after Detach = %+v, want none", ps)
	}
	if s.Record().Status != store.StatusStopped {
		t.Errorf("status after Detach = %q, want stopped", s.Record().Status)
	}
}

// Pending approvals survive a restart: a new Manager on the same store
// re-queues them, and an asker for the same call re-attaches.
func TestManagerRestoreApprovals(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(t.Context(), filepath.Join(dir, "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now().UTC()
	if err := st.CreateSession(t.Context(), store.Session{ID: "s1", Kind: KindAgent, Status: store.StatusIdle,
		Config: json.RawMessage(`{}`), Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	req := clickAt(t, "c1", 10, 20)
	pr := PermissionRequest{Request: approvals.Request{ID: "ap_1", Session: "s1", CallID: "c1", Rule: "confirm",
		Action: req.Action, Frame: req.Frame, Created: now, Deadline: now.Add(time.Hour)}, ToolCallID: "c1", ApprovalID: "ap_1"}
	b, _ := json.Marshal(pr)
	if err := st.PutApproval(t.Context(), store.Approval{ID: "ap_1", Session: "s1", CallID: "c1", Rule: "confirm",
		Reason: "clicks need a human", Request: b, Status: store.ApprovalPending, Created: now, Deadline: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Store: st, Dir: dir, NewDisplay: func(context.Context, Spec) (Display, error) { return nil, errors.New("none") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	// The queue part of Restore: Restore itself would then close the
	// request, since no resumed run waits for it (restore_test.go).
	if err := m.restoreApprovals(t.Context()); err != nil {
		t.Fatalf("restoreApprovals() = %v", err)
	}
	got, err := m.q.Get("ap_1")
	if err != nil || !cmp.Equal(got.Action, req.Action) || got.Frame.ID != "f1" {
		t.Fatalf("restored request = %+v, %v; want ap_1 with its action and frame", got, err)
	}
	ap, _ := m.Approver("s1", clickRules, nil, nil)
	done := ask(t, t.Context(), ap, req)
	// An edit's point is in the screenshot's pixels.
	at := actions.Point{X: 50, Y: 60}
	if err := m.Decide(t.Context(), "ap_1", Decision{Decision: "edit", Edit: &Edit{At: &at}}, "ann"); err != nil {
		t.Fatalf("Decide(edit) = %v", err)
	}
	d := <-done
	if d.err != nil || d.d.Edit == nil || d.d.Edit.At != at {
		t.Errorf("Approve() re-attached = %+v, %v; want the edit at %v", d.d, d.err, at)
	}
	if len(m.q.Pending()) != 0 {
		t.Errorf("pending = %+v, want none", m.q.Pending())
	}
}

func TestStatusOf(t *testing.T) {
	tests := []struct {
		v                  approvals.Verdict
		status, by, action string
	}{
		{approvals.Verdict{Kind: approvals.Approve, By: "ann"}, store.ApprovalApproved, "ann", "approve"},
		{approvals.Verdict{Kind: approvals.Deny, By: "ann"}, store.ApprovalDenied, "ann", "deny"},
		{approvals.Verdict{Kind: approvals.Edit, By: "ann"}, store.ApprovalEdited, "ann", "edit"},
		{approvals.Verdict{Kind: approvals.Deny, By: byTimeout}, store.ApprovalExpired, bySystem, "expire"},
		{approvals.Verdict{Kind: approvals.Deny, By: bySystem}, store.ApprovalExpired, bySystem, "cancel"},
	}
	for _, tt := range tests {
		status, by, action := statusOf(tt.v)
		if status != tt.status || by != tt.by || action != tt.action {
			t.Errorf("statusOf(%+v) = %q, %q, %q, want %q, %q, %q", tt.v, status, by, action, tt.status, tt.by, tt.action)
		}
	}
}

// safetyAt is a request for a call's provider safety checks: index -1 and
// no action, on a 100x100 frame.
func safetyAt(call string, checks ...harness.SafetyCheck) harness.ApprovalRequest {
	f := screen.Frame{ID: "f1", Viewport: screen.Size{W: 100, H: 100}, Sent: screen.Size{W: 100, H: 100},
		Capture: screen.Size{W: 100, H: 100}, DPR: 1, Clip: actions.Rect{Max: actions.Pt(100, 100)}}
	return harness.ApprovalRequest{CallID: call, Index: -1, Frame: f, SafetyChecks: checks, ModelText: "the page asks"}
}

// held waits for the permission_request of a request that done answers;
// an answer before it fails the test.
func held(t *testing.T, s *Session, done <-chan approved) PermissionRequest {
	t.Helper()
	var after int64
	for {
		evs, changed := s.Events(after)
		for _, e := range evs {
			after = e.Seq
			if e.Type == EventPermissionRequest {
				var pr PermissionRequest
				if err := json.Unmarshal(e.Data, &pr); err != nil {
					t.Fatalf("permission_request %s: %v", e.Data, err)
				}
				return pr
			}
		}
		select {
		case <-changed:
		case got := <-done:
			t.Fatalf("Approve() = %+v, %v with no permission_request, want the request held", got.d, got.err)
		case <-t.Context().Done():
			t.Fatal("no permission_request event")
		}
	}
}

var injection = harness.SafetyCheck{ID: "sc_1", Code: "malicious_instructions", Message: "The page may hold instructions for the model."}

// A call's provider safety checks are held for a human under every
// supervise mode: persisted with the provider's code and message, streamed
// and released only by a human. Approval returns no error; a denial and an
// expiry are denials in words for the model, never an internal error.
func TestManagerSafetyChecks(t *testing.T) {
	tests := []struct {
		name      string
		supervise approvals.Supervise
		decision  string // "" lets it expire
		wantErr   []string
		wantStore string
	}{
		{"approved", approvals.SuperviseFlagged, "approve", nil, store.ApprovalApproved},
		{"approved with supervise none", approvals.SuperviseNone, "approve", nil, store.ApprovalApproved},
		{"approved with supervise all", approvals.SuperviseAll, "approve", nil, store.ApprovalApproved},
		{"denied", approvals.SuperviseFlagged, "deny", []string{"denied", "safety-check", "not this page"}, store.ApprovalDenied},
		{"denied with supervise none", approvals.SuperviseNone, "deny", []string{"denied", "not this page"}, store.ApprovalDenied},
		{"expired", approvals.SuperviseNone, "", []string{"denied", "no human decided in time"}, store.ApprovalExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, t.TempDir())
			id, err := m.Attach(t.Context(), KindMCP, "test", "ann")
			if err != nil {
				t.Fatal(err)
			}
			s, _ := m.Get(id)
			rules := approvals.Rules{Supervise: tt.supervise}
			if tt.decision == "" {
				rules.Timeout = time.Millisecond // the queue's own timer denies it
			}
			ap, err := m.Approver(id, rules, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			done := ask(t, t.Context(), ap, safetyAt("c1", injection))
			pr := held(t, s, done)
			if pr.Index != -1 || pr.Rule != approvals.RuleSafetyCheck || !cmp.Equal(pr.SafetyChecks, []harness.SafetyCheck{injection}) {
				t.Errorf("permission_request = %+v, want index -1, rule safety-check and the provider's check", pr)
			}
			a, err := m.st.Approval(t.Context(), pr.ApprovalID)
			if err != nil {
				t.Fatalf("stored approval %s: %v", pr.ApprovalID, err)
			}
			for _, want := range []string{injection.Code, injection.Message} {
				if !strings.Contains(string(a.Request), want) {
					t.Errorf("stored request %s lacks %q", a.Request, want)
				}
			}
			if tt.decision != "" {
				select {
				case got := <-done:
					t.Fatalf("Approve() = %+v, %v before any decision, want it held", got.d, got.err)
				default:
				}
				if err := m.Decide(t.Context(), pr.ApprovalID, Decision{Decision: tt.decision, Reason: "not this page"}, "ann"); err != nil {
					t.Fatalf("Decide(%s) = %v", tt.decision, err)
				}
			}
			got := <-done
			switch {
			case tt.wantErr == nil && got.err != nil:
				t.Errorf("Approve() after approval = %v, want nil", got.err)
			case tt.wantErr != nil && !errors.Is(got.err, harness.ErrDenied):
				t.Errorf("Approve() = %v, want ErrDenied", got.err)
			}
			for _, want := range tt.wantErr {
				if got.err == nil || !strings.Contains(got.err.Error(), want) {
					t.Errorf("Approve() = %v, want it to say %q", got.err, want)
				}
			}
			if a, _ := m.st.Approval(t.Context(), pr.ApprovalID); a.Status != tt.wantStore {
				t.Errorf("stored status = %q, want %q", a.Status, tt.wantStore)
			}
		})
	}
}

// A pending safety check survives a restart: it is restored with its
// checks and no action, listed, and an asker for the same call re-attaches
// to it.
func TestManagerRestoreSafetyChecks(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(t.Context(), filepath.Join(dir, "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m1, err := New(Config{Store: st, Dir: dir, ApprovalTimeout: time.Hour,
		NewDisplay: func(context.Context, Spec) (Display, error) { return nil, errors.New("none") }})
	if err != nil {
		t.Fatal(err)
	}
	id, err := m1.Attach(t.Context(), KindMCP, "test", "ann")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m1.Get(id)
	ap, _ := m1.Approver(id, approvals.Rules{Supervise: approvals.SuperviseNone}, nil, nil)
	ctx, cancel := context.WithCancelCause(t.Context())
	done := ask(t, ctx, ap, safetyAt("c1", injection))
	pr := held(t, s, done)
	cancel(errShutdown) // a shutdown leaves it pending
	<-done
	if err := m1.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}

	m2, err := New(Config{Store: st, Dir: dir, ApprovalTimeout: time.Hour,
		NewDisplay: func(context.Context, Spec) (Display, error) { return nil, errors.New("none") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m2.Close(context.Background()) })
	// The queue part of Restore (see TestManagerRestoreApprovals).
	if err := m2.restoreApprovals(t.Context()); err != nil {
		t.Fatalf("restoreApprovals() = %v", err)
	}
	got, err := m2.q.Get(pr.ApprovalID)
	if err != nil || got.Index != -1 || got.Action.Kind != 0 || !cmp.Equal(got.SafetyChecks, []harness.SafetyCheck{injection}) {
		t.Fatalf("restored request = %+v, %v; want index -1, no action and the check", got, err)
	}
	ap2, _ := m2.Approver(id, approvals.Rules{Supervise: approvals.SuperviseNone}, nil, nil)
	done = ask(t, t.Context(), ap2, safetyAt("c1", injection))
	if err := m2.Decide(t.Context(), pr.ApprovalID, Decision{Decision: "approve"}, "ann"); err != nil {
		t.Fatalf("Decide(approve) = %v", err)
	}
	if d := <-done; d.err != nil {
		t.Errorf("Approve() re-attached = %v, want the approval", d.err)
	}
	if ps := m2.q.Pending(); len(ps) != 0 {
		t.Errorf("pending = %+v, want none", ps)
	}
}

// A request that cannot be recorded (the store has gone) is refused in
// words for the model; the store's error stays in the log.
func TestManagerApprovalNotRecorded(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(t.Context(), filepath.Join(dir, "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Store: st, Dir: dir, ApprovalTimeout: time.Hour,
		NewDisplay: func(context.Context, Spec) (Display, error) { return nil, errors.New("none") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) }) // the store is closed: Close may complain
	id, err := m.Attach(t.Context(), KindMCP, "test", "ann")
	if err != nil {
		t.Fatal(err)
	}
	ap, _ := m.Approver(id, clickRules, nil, nil)
	st.Close()
	tests := []struct {
		name string
		r    harness.ApprovalRequest
		want string
	}{
		{"safety checks", safetyAt("c1", injection), "safety checks could not be put before a human"},
		{"action", clickAt(t, "c2", 10, 10), "this action could not be put before a human"},
	}
	for _, tt := range tests {
		_, err := ap.Approve(t.Context(), tt.r)
		if !errors.Is(err, harness.ErrDenied) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Approve(%s) with a closed store = %v, want ErrDenied saying %q", tt.name, err, tt.want)
		}
		for _, internal := range []string{"sql", "database", "store", "record approval request"} {
			if err != nil && strings.Contains(err.Error(), internal) {
				t.Errorf("Approve(%s) = %q, which shows the internal error (%q)", tt.name, err, internal)
			}
		}
	}
}
