// Package storetest is the conformance suite every store backend passes.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/store"
)

// Run runs the suite. newDSN returns the DSN of a new, empty database for
// one subtest; the suite opens it with store.Open, sometimes twice at once,
// as two server processes would. Subtests run in parallel.
func Run(t *testing.T, newDSN func(t *testing.T) string) {
	tests := []struct {
		name string
		fn   func(t *testing.T, dsn string)
	}{
		{"Sessions", testSessions},
		{"Events", testEvents},
		{"Messages", testMessages},
		{"ToolCalls", testToolCalls},
		{"Approvals", testApprovals},
		{"Decide", testDecide},
		{"DecideRace", testDecideRace},
		{"Audit", testAudit},
		{"Shots", testShots},
		{"BadInput", testBadInput},
		{"ConcurrentAppend", testConcurrentAppend},
		{"Batch", testBatch},
		{"WriteAsync", testWriteAsync},
		{"CloseMidBatch", testCloseMidBatch},
		{"Reopen", testReopen},
		{"ConcurrentOpen", testConcurrentOpen},
		{"Canceled", testCanceled},
		{"Replicas", testReplicas},
		{"Ownership", testOwnership},
		{"ClaimRace", testClaimRace},
		{"Retention", testRetention},
		{"Leases", testLeases},
		{"ReplicaIncarnation", testReplicaIncarnation},
		{"ConnOwner", testConnOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newDSN(t))
		})
	}
}

// open opens dsn and closes the store when t ends.
func open(t *testing.T, dsn string) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("Open(%q) = %v", dsn, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return s
}

// base is a time with nanoseconds, in a zone other than UTC; the store
// keeps microseconds and answers in UTC.
var base = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("X", 3600))

func at(d time.Duration) time.Time { return base.Add(d) }

// stored is what a time looks like after a round trip.
func stored(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Microsecond).UTC()
}

// payload is JSON whose exact bytes must survive: spacing, key order,
// escapes and non-ASCII text.
var payload = json.RawMessage(`{"z": 1,  "a": [true, null, 1.50, "é\u00e9 \"q\" \\ <>&"], "n": {"x": []}}`)

// checkUTC fails unless every time is in UTC.
func checkUTC(t *testing.T, what string, ts ...time.Time) {
	t.Helper()
	for _, tm := range ts {
		if tm.Location() != time.UTC {
			t.Errorf("%s: time %v is in %v, want UTC", what, tm, tm.Location())
		}
	}
}

func newSession(id string, created time.Time) store.Session {
	return store.Session{
		ID: id, Kind: "agent", Title: "title of " + id, Status: store.StatusRunning,
		Config: payload, State: json.RawMessage(`[1,2,3]`), URL: "https://example.com/" + id,
		Step: 3, Error: "", Created: created, Updated: created.Add(time.Second),
	}
}

func storedSession(s store.Session) store.Session {
	s.Created, s.Updated = stored(s.Created), stored(s.Updated)
	return s
}

func mustCreate(t *testing.T, s store.Store, ids ...string) {
	t.Helper()
	for i, id := range ids {
		if err := s.CreateSession(t.Context(), newSession(id, at(time.Duration(i)*time.Minute))); err != nil {
			t.Fatalf("CreateSession(%s) = %v", id, err)
		}
	}
}

func testSessions(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)

	if got, err := s.Sessions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Sessions() on an empty store = %v, %v, want none", got, err)
	}
	a := newSession("a", at(0))
	b := newSession("b", at(time.Hour))
	b.Config, b.State, b.Kind = nil, nil, "executor"
	c := newSession("c", at(time.Hour)) // same time as b: ties go by id, descending
	for _, x := range []store.Session{a, b, c} {
		if err := s.CreateSession(ctx, x); err != nil {
			t.Fatalf("CreateSession(%s) = %v", x.ID, err)
		}
	}
	if err := s.CreateSession(ctx, newSession("a", at(2*time.Hour))); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateSession(existing a) = %v, want ErrConflict", err)
	}

	got, err := s.Session(ctx, "a")
	if err != nil {
		t.Fatalf("Session(a) = %v", err)
	}
	if diff := cmp.Diff(storedSession(a), got); diff != "" {
		t.Errorf("Session(a) (-want +got):\n%s", diff)
	}
	if string(got.Config) != string(payload) {
		t.Errorf("Session(a).Config = %s, want %s byte for byte", got.Config, payload)
	}
	checkUTC(t, "Session(a)", got.Created, got.Updated)
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session(nope) = %v, want ErrNotFound", err)
	}

	list, err := s.Sessions(ctx)
	if err != nil {
		t.Fatalf("Sessions() = %v", err)
	}
	want := []store.Session{storedSession(c), storedSession(b), storedSession(a)}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("Sessions() (-want +got):\n%s", diff)
	}

	// Update replaces every field, and leaves the streams' counters alone.
	e := &store.Event{Session: "a", Type: "x"}
	if err := s.AppendEvent(ctx, e); err != nil {
		t.Fatalf("AppendEvent() = %v", err)
	}
	u := store.Session{ID: "a", Kind: "executor", Title: "new", Status: store.StatusFailed, Step: 9,
		Error: "display died", URL: "about:blank", Created: at(5 * time.Hour), Updated: at(6 * time.Hour)}
	if err := s.UpdateSession(ctx, u); err != nil {
		t.Fatalf("UpdateSession(a) = %v", err)
	}
	if got, err := s.Session(ctx, "a"); err != nil {
		t.Fatalf("Session(a) = %v", err)
	} else if diff := cmp.Diff(storedSession(u), got); diff != "" {
		t.Errorf("Session(a) after update (-want +got):\n%s", diff)
	}
	if err := s.UpdateSession(ctx, newSession("nope", at(0))); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateSession(nope) = %v, want ErrNotFound", err)
	}
	e = &store.Event{Session: "a", Type: "y"}
	if err := s.AppendEvent(ctx, e); err != nil || e.Seq != 2 {
		t.Errorf("AppendEvent() after UpdateSession: Seq %d, %v, want 2, nil", e.Seq, err)
	}
}

func testEvents(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a", "b")

	if got, err := s.Events(ctx, "a", 0); err != nil || len(got) != 0 {
		t.Errorf("Events(a, 0) of a new session = %v, %v, want none", got, err)
	}
	var want []store.Event
	for i, sess := range []string{"a", "a", "b", "a"} {
		e := &store.Event{Session: sess, Type: fmt.Sprintf("t%d", i), Data: payload, Time: at(time.Duration(i) * time.Millisecond)}
		if err := s.AppendEvent(ctx, e); err != nil {
			t.Fatalf("AppendEvent(%d) = %v", i, err)
		}
		if e.Time != stored(at(time.Duration(i)*time.Millisecond)) {
			t.Errorf("AppendEvent(%d) set Time %v, want the stored %v", i, e.Time, stored(e.Time))
		}
		if sess == "a" {
			want = append(want, *e)
		}
	}
	if seqs := seqsOf(want); !slices.Equal(seqs, []int64{1, 2, 3}) {
		t.Errorf("AppendEvent() seqs of a = %v, want [1 2 3]", seqs)
	}
	got, err := s.Events(ctx, "a", 0)
	if err != nil {
		t.Fatalf("Events(a, 0) = %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events(a, 0) (-want +got):\n%s", diff)
	}
	for _, e := range got {
		checkUTC(t, "Events", e.Time)
		if string(e.Data) != string(payload) {
			t.Errorf("Events(a, 0) seq %d: Data = %s, want %s byte for byte", e.Seq, e.Data, payload)
		}
	}
	if got, err := s.Events(ctx, "a", 2); err != nil || len(got) != 1 || got[0].Seq != 3 {
		t.Errorf("Events(a, 2) = %v, %v, want seq 3 only", got, err)
	}
	if got, err := s.Events(ctx, "a", 3); err != nil || len(got) != 0 {
		t.Errorf("Events(a, 3) = %v, %v, want none", got, err)
	}
	if got, err := s.Events(ctx, "b", 0); err != nil || len(got) != 1 || got[0].Seq != 1 {
		t.Errorf("Events(b, 0) = %v, %v, want seq 1 only", got, err)
	}

	// A zero time is now; no data is null.
	before := time.Now().Add(-time.Second)
	e := &store.Event{Session: "b", Type: "bare"}
	if err := s.AppendEvent(ctx, e); err != nil {
		t.Fatalf("AppendEvent(no time) = %v", err)
	}
	if e.Time.Before(before) || e.Time.After(time.Now().Add(time.Second)) {
		t.Errorf("AppendEvent(no time) set Time %v, want about now", e.Time)
	}
	if got, err := s.Events(ctx, "b", 1); err != nil || len(got) != 1 || got[0].Data != nil || !got[0].Time.Equal(e.Time) {
		t.Errorf("Events(b, 1) = %v, %v, want one event without data at %v", got, err, e.Time)
	}

	if err := s.AppendEvent(ctx, &store.Event{Session: "nope", Type: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendEvent(session nope) = %v, want ErrNotFound", err)
	}
	if _, err := s.Events(ctx, "nope", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Events(nope) = %v, want ErrNotFound", err)
	}
}

func seqsOf(es []store.Event) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

func testMessages(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a", "b")

	msgs := []*store.Message{
		{Session: "a", Role: "user", Content: json.RawMessage(`"hello"`), Time: at(0)},
		{Session: "a", Role: "assistant", Content: payload, Time: at(time.Second)},
		{Session: "b", Role: "user", Content: json.RawMessage(`"other"`), Time: at(0)},
		{Session: "a", Role: "tool", Content: json.RawMessage(`{"ok":true}`), CallID: "call_1", Time: at(2 * time.Second)},
	}
	var want []store.Message
	for i, m := range msgs {
		if err := s.AppendMessage(ctx, m); err != nil {
			t.Fatalf("AppendMessage(%d) = %v", i, err)
		}
		if m.Session == "a" {
			want = append(want, *m)
		}
	}
	for i, m := range want {
		if m.Seq != int64(i+1) {
			t.Errorf("AppendMessage() seq of message %d of a = %d, want %d", i, m.Seq, i+1)
		}
	}
	got, err := s.Messages(ctx, "a")
	if err != nil {
		t.Fatalf("Messages(a) = %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Messages(a) (-want +got):\n%s", diff)
	}
	for _, m := range got {
		checkUTC(t, "Messages", m.Time)
	}
	if got, err := s.Messages(ctx, "b"); err != nil || len(got) != 1 || got[0].Seq != 1 {
		t.Errorf("Messages(b) = %v, %v, want seq 1 only", got, err)
	}
	// Messages and events count separately.
	e := &store.Event{Session: "a", Type: "x"}
	if err := s.AppendEvent(ctx, e); err != nil || e.Seq != 1 {
		t.Errorf("AppendEvent(a) after 3 messages: Seq %d, %v, want 1, nil", e.Seq, err)
	}
	if err := s.AppendMessage(ctx, &store.Message{Session: "nope", Role: "user"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendMessage(session nope) = %v, want ErrNotFound", err)
	}
	if _, err := s.Messages(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Messages(nope) = %v, want ErrNotFound", err)
	}
}

func testToolCalls(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a", "b")

	if got, err := s.ToolCalls(ctx, "a"); err != nil || len(got) != 0 {
		t.Errorf("ToolCalls(a) of a new session = %v, %v, want none", got, err)
	}
	// Ids out of alphabetical order, same times: the order is the order of
	// first insertion.
	calls := []store.ToolCall{
		{Session: "a", ID: "toolu_z", Step: 1, Name: "computer", Input: payload, Status: store.CallPending, Created: at(0), Updated: at(0)},
		{Session: "a", ID: "toolu_b", Step: 1, Name: "computer", Input: json.RawMessage(`{"action":"click"}`), Status: store.CallPending, Created: at(0), Updated: at(0)},
		{Session: "b", ID: "toolu_b", Step: 4, Name: "other", Status: store.CallClient, Created: at(0), Updated: at(0)},
		{Session: "a", ID: "toolu_m", Step: 2, Name: "bash", Status: store.CallRunning, Created: at(0), Updated: at(0)},
	}
	for _, c := range calls {
		if err := s.PutToolCall(ctx, c); err != nil {
			t.Fatalf("PutToolCall(%s/%s) = %v", c.Session, c.ID, err)
		}
	}
	done := calls[0]
	done.Status, done.Result, done.Updated = store.CallDone, json.RawMessage(`{"content":[{"type":"image"}]}`), at(time.Minute)
	if err := s.PutToolCall(ctx, done); err != nil {
		t.Fatalf("PutToolCall(replace) = %v", err)
	}
	want := []store.ToolCall{done, calls[1], calls[3]}
	for i := range want {
		want[i].Created, want[i].Updated = stored(want[i].Created), stored(want[i].Updated)
	}
	got, err := s.ToolCalls(ctx, "a")
	if err != nil {
		t.Fatalf("ToolCalls(a) = %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ToolCalls(a) (-want +got):\n%s", diff)
	}
	for _, c := range got {
		checkUTC(t, "ToolCalls", c.Created, c.Updated)
	}
	if got, err := s.ToolCalls(ctx, "b"); err != nil || len(got) != 1 || got[0].Name != "other" {
		t.Errorf("ToolCalls(b) = %v, %v, want the one call of b", got, err)
	}
	if err := s.PutToolCall(ctx, store.ToolCall{Session: "nope", ID: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutToolCall(session nope) = %v, want ErrNotFound", err)
	}
	if _, err := s.ToolCalls(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ToolCalls(nope) = %v, want ErrNotFound", err)
	}
}

func newApproval(id, session string, created time.Time) store.Approval {
	return store.Approval{
		ID: id, Session: session, CallID: "call_" + id, Index: 2, Rule: "buy-button", Reason: "clicks Buy",
		Request: payload, Status: store.ApprovalPending, Created: created, Deadline: created.Add(5 * time.Minute),
	}
}

func storedApproval(a store.Approval) store.Approval {
	a.Created, a.Deadline, a.Decided = stored(a.Created), stored(a.Deadline), stored(a.Decided)
	return a
}

func testApprovals(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a", "b")

	p1 := newApproval("p1", "a", at(2*time.Second))
	p2 := newApproval("p2", "b", at(time.Second))
	p3 := newApproval("p3", "a", at(3*time.Second))
	p3.Index, p3.Deadline = -1, time.Time{} // a safety check without a deadline
	d1 := newApproval("d1", "a", at(0))
	d1.Status, d1.Decision, d1.DecidedBy, d1.Decided = store.ApprovalDenied, json.RawMessage(`{"reason":"no"}`), "operator:ann", at(time.Minute)
	for _, a := range []store.Approval{p1, p2, p3, d1} {
		if err := s.PutApproval(ctx, a); err != nil {
			t.Fatalf("PutApproval(%s) = %v", a.ID, err)
		}
	}
	for _, a := range []store.Approval{p1, p3, d1} {
		got, err := s.Approval(ctx, a.ID)
		if err != nil {
			t.Fatalf("Approval(%s) = %v", a.ID, err)
		}
		if diff := cmp.Diff(storedApproval(a), got); diff != "" {
			t.Errorf("Approval(%s) (-want +got):\n%s", a.ID, diff)
		}
		checkUTC(t, "Approval", got.Created, got.Deadline, got.Decided)
	}
	if got, _ := s.Approval(ctx, "p3"); !got.Deadline.IsZero() || !got.Decided.IsZero() {
		t.Errorf("Approval(p3) Deadline, Decided = %v, %v, want zero times", got.Deadline, got.Decided)
	}
	if _, err := s.Approval(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Approval(nope) = %v, want ErrNotFound", err)
	}
	if err := s.PutApproval(ctx, newApproval("x", "nope", at(0))); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutApproval(session nope) = %v, want ErrNotFound", err)
	}

	for _, tt := range []struct {
		f    store.ApprovalFilter
		want []string
	}{
		{store.ApprovalFilter{}, []string{"d1", "p2", "p1", "p3"}},
		{store.ApprovalFilter{Session: "a"}, []string{"d1", "p1", "p3"}},
		{store.ApprovalFilter{Status: store.ApprovalPending}, []string{"p2", "p1", "p3"}},
		{store.ApprovalFilter{Session: "a", Status: store.ApprovalPending}, []string{"p1", "p3"}},
		{store.ApprovalFilter{Session: "b", Status: store.ApprovalDenied}, nil},
		{store.ApprovalFilter{Session: "nope"}, nil},
	} {
		got, err := s.Approvals(ctx, tt.f)
		if err != nil {
			t.Errorf("Approvals(%+v) = %v", tt.f, err)
			continue
		}
		var ids []string
		for _, a := range got {
			ids = append(ids, a.ID)
		}
		if !slices.Equal(ids, tt.want) {
			t.Errorf("Approvals(%+v) = %v, want %v", tt.f, ids, tt.want)
		}
	}

	// Put replaces.
	p1.Reason, p1.Status = "changed", store.ApprovalExpired
	if err := s.PutApproval(ctx, p1); err != nil {
		t.Fatalf("PutApproval(p1 again) = %v", err)
	}
	if got, err := s.Approval(ctx, "p1"); err != nil || got.Reason != "changed" || got.Status != store.ApprovalExpired {
		t.Errorf("Approval(p1) after replace = %+v, %v, want reason changed, status expired", got, err)
	}
}

func testDecide(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a")
	p := newApproval("p", "a", at(0))
	if err := s.PutApproval(ctx, p); err != nil {
		t.Fatalf("PutApproval() = %v", err)
	}

	dec := json.RawMessage(`{"edit":{"x":10,"y":20}}`)
	got, err := s.Decide(ctx, "p", store.ApprovalEdited, dec, "operator:ann", at(time.Minute))
	if err != nil {
		t.Fatalf("Decide(p, edited) = %v", err)
	}
	want := storedApproval(p)
	want.Status, want.Decision, want.DecidedBy, want.Decided = store.ApprovalEdited, dec, "operator:ann", stored(at(time.Minute))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decide(p, edited) (-want +got):\n%s", diff)
	}
	if stored, err := s.Approval(ctx, "p"); err != nil {
		t.Fatalf("Approval(p) = %v", err)
	} else if diff := cmp.Diff(want, stored); diff != "" {
		t.Errorf("Approval(p) after Decide (-want +got):\n%s", diff)
	}

	// A second decision loses, and sees the first.
	got, err = s.Decide(ctx, "p", store.ApprovalApproved, nil, "operator:bob", at(2*time.Minute))
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("Decide(p) again = %v, want ErrConflict", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decide(p) again returned (-want +got):\n%s", diff)
	}

	if _, err := s.Decide(ctx, "nope", store.ApprovalApproved, nil, "operator:ann", at(0)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Decide(nope) = %v, want ErrNotFound", err)
	}
	q := newApproval("q", "a", at(0))
	if err := s.PutApproval(ctx, q); err != nil {
		t.Fatalf("PutApproval(q) = %v", err)
	}
	for _, status := range []string{store.ApprovalPending, "", "maybe"} {
		if _, err := s.Decide(ctx, "q", status, nil, "operator:ann", at(0)); err == nil || errors.Is(err, store.ErrConflict) {
			t.Errorf("Decide(q, %q) = %v, want an error that is not ErrConflict", status, err)
		}
	}
	// A zero time is now.
	got, err = s.Decide(ctx, "q", store.ApprovalExpired, nil, "system", time.Time{})
	if err != nil || got.Decided.Before(time.Now().Add(-time.Minute)) || got.Decision != nil {
		t.Errorf("Decide(q, expired, zero time) = %+v, %v, want decided about now, no decision", got, err)
	}
}

// testDecideRace decides one approval from many goroutines over two
// stores: exactly one wins, and every loser sees the winner's decision.
func testDecideRace(t *testing.T, dsn string) {
	ctx := t.Context()
	stores := []store.Store{open(t, dsn), open(t, dsn)}
	mustCreate(t, stores[0], "a")
	const rounds, deciders = 3, 8
	for r := range rounds {
		id := fmt.Sprintf("p%d", r)
		if err := stores[0].PutApproval(ctx, newApproval(id, "a", at(0))); err != nil {
			t.Fatalf("PutApproval(%s) = %v", id, err)
		}
		type answer struct {
			a   store.Approval
			err error
			by  string
		}
		answers := make(chan answer, deciders)
		var wg sync.WaitGroup
		for i := range deciders {
			wg.Go(func() {
				by := fmt.Sprintf("operator:%d", i)
				a, err := stores[i%2].Decide(ctx, id, store.ApprovalApproved, nil, by, at(time.Duration(i)))
				answers <- answer{a, err, by}
			})
		}
		wg.Wait()
		close(answers)
		var winners []string
		var seen []store.Approval
		for ans := range answers {
			switch {
			case ans.err == nil:
				winners = append(winners, ans.by)
			case !errors.Is(ans.err, store.ErrConflict):
				t.Errorf("Decide(%s) by %s = %v, want nil or ErrConflict", id, ans.by, ans.err)
			}
			seen = append(seen, ans.a)
		}
		if len(winners) != 1 {
			t.Fatalf("Decide(%s) from %d goroutines: winners %v, want exactly one", id, deciders, winners)
		}
		for _, a := range seen {
			if a.DecidedBy != winners[0] || a.Status != store.ApprovalApproved {
				t.Errorf("Decide(%s) returned decided by %q status %q, want the winner %q, approved", id, a.DecidedBy, a.Status, winners[0])
			}
		}
	}
}

func testAudit(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a")

	if got, err := s.AuditLog(ctx, ""); err != nil || len(got) != 0 {
		t.Errorf("AuditLog(\"\") of a new store = %v, %v, want none", got, err)
	}
	entries := []*store.Audit{
		{Time: at(0), Actor: "token:1", Action: "login"},
		{Time: at(time.Second), Actor: "operator:ann", Action: "approve", Session: "a", Subject: "p1", Detail: payload},
		{Time: at(2 * time.Second), Actor: "system", Action: "expire", Session: "gone", Subject: "p2"},
		{Actor: "operator:ann", Action: "takeover", Session: "a"},
	}
	var ids []int64
	for _, e := range entries {
		if err := s.AppendAudit(ctx, e); err != nil {
			t.Fatalf("AppendAudit(%s) = %v", e.Action, err)
		}
		ids = append(ids, e.ID)
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) || ids[0] <= 0 {
		t.Errorf("AppendAudit() ids = %v, want positive and increasing", ids)
	}
	if entries[3].Time.IsZero() {
		t.Errorf("AppendAudit(no time) left Time zero, want now")
	}
	all, err := s.AuditLog(ctx, "")
	if err != nil {
		t.Fatalf("AuditLog(\"\") = %v", err)
	}
	var want []store.Audit
	for _, e := range entries {
		want = append(want, *e)
	}
	want[0].Time, want[1].Time, want[2].Time = stored(want[0].Time), stored(want[1].Time), stored(want[2].Time)
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("AuditLog(\"\") (-want +got):\n%s", diff)
	}
	for _, e := range all {
		checkUTC(t, "AuditLog", e.Time)
	}
	ofA, err := s.AuditLog(ctx, "a")
	if err != nil {
		t.Fatalf("AuditLog(a) = %v", err)
	}
	if diff := cmp.Diff([]store.Audit{want[1], want[3]}, ofA); diff != "" {
		t.Errorf("AuditLog(a) (-want +got):\n%s", diff)
	}
}

func testShots(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a", "b")

	shots := []store.Shot{
		{Session: "a", Name: "shots/0002.png", FrameID: "f2", Step: 2, Bytes: 2000, Time: at(2 * time.Second)},
		{Session: "a", Name: "shots/0001.png", FrameID: "f1", Step: 1, Bytes: 1000, Time: at(time.Second)},
		{Session: "b", Name: "shots/0001.png", FrameID: "g1", Step: 1, Bytes: 10, Time: at(0)},
		{Session: "a", Name: "shots/0001b.png", FrameID: "f1b", Step: 1, Bytes: 1 << 40, Time: at(time.Second)},
	}
	for _, sh := range shots {
		if err := s.PutShot(ctx, sh); err != nil {
			t.Fatalf("PutShot(%s/%s) = %v", sh.Session, sh.Name, err)
		}
	}
	re := shots[0]
	re.Bytes = 2500
	if err := s.PutShot(ctx, re); err != nil {
		t.Fatalf("PutShot(replace) = %v", err)
	}
	want := []store.Shot{shots[1], shots[3], re}
	for i := range want {
		want[i].Time = stored(want[i].Time)
	}
	got, err := s.Shots(ctx, "a")
	if err != nil {
		t.Fatalf("Shots(a) = %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Shots(a) (-want +got):\n%s", diff)
	}
	for _, sh := range got {
		checkUTC(t, "Shots", sh.Time)
	}
	if err := s.PutShot(ctx, store.Shot{Session: "nope", Name: "x.png"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutShot(session nope) = %v, want ErrNotFound", err)
	}
	if _, err := s.Shots(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Shots(nope) = %v, want ErrNotFound", err)
	}
}

// testBadInput checks that bad input is an error that stores nothing.
func testBadInput(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a")
	bad := json.RawMessage(`{"unterminated": `)

	bs := newSession("b", at(0))
	bs.State = bad
	for name, err := range map[string]error{
		"CreateSession(bad state)": s.CreateSession(ctx, bs),
		"CreateSession(no id)":     s.CreateSession(ctx, store.Session{Kind: "agent"}),
		"UpdateSession(bad state)": s.UpdateSession(ctx, store.Session{ID: "a", State: bad}),
		"AppendEvent(bad data)":    s.AppendEvent(ctx, &store.Event{Session: "a", Type: "x", Data: bad}),
		"AppendEvent(nil)":         s.AppendEvent(ctx, nil),
		"AppendMessage(bad)":       s.AppendMessage(ctx, &store.Message{Session: "a", Role: "user", Content: bad}),
		"AppendMessage(nil)":       s.AppendMessage(ctx, nil),
		"PutToolCall(bad input)":   s.PutToolCall(ctx, store.ToolCall{Session: "a", ID: "c", Input: bad}),
		"PutToolCall(no id)":       s.PutToolCall(ctx, store.ToolCall{Session: "a"}),
		"PutApproval(bad request)": s.PutApproval(ctx, store.Approval{ID: "p", Session: "a", Request: bad}),
		"PutApproval(no id)":       s.PutApproval(ctx, store.Approval{Session: "a"}),
		"AppendAudit(bad detail)":  s.AppendAudit(ctx, &store.Audit{Actor: "x", Action: "y", Detail: bad}),
		"AppendAudit(nil)":         s.AppendAudit(ctx, nil),
		"PutShot(no name)":         s.PutShot(ctx, store.Shot{Session: "a"}),
	} {
		if err == nil {
			t.Errorf("%s = nil, want an error", name)
		}
	}
	if err := s.PutApproval(ctx, newApproval("q", "a", at(0))); err != nil {
		t.Fatalf("PutApproval(q) = %v", err)
	}
	if _, err := s.Decide(ctx, "q", store.ApprovalApproved, bad, "x", at(0)); err == nil {
		t.Errorf("Decide(bad decision) = nil, want an error")
	}

	if _, err := s.Session(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session(b) after a bad CreateSession = %v, want ErrNotFound", err)
	}
	if got, err := s.Session(ctx, "a"); err != nil || string(got.State) != `[1,2,3]` {
		t.Errorf("Session(a) after a bad UpdateSession = %s, %v, want the old state", got.State, err)
	}
	checkEmpty := func(name string, n int, err error) {
		if err != nil || n != 0 {
			t.Errorf("%s after bad input: %d entries, %v, want none", name, n, err)
		}
	}
	ev, err := s.Events(ctx, "a", 0)
	checkEmpty("Events(a)", len(ev), err)
	ms, err := s.Messages(ctx, "a")
	checkEmpty("Messages(a)", len(ms), err)
	tc, err := s.ToolCalls(ctx, "a")
	checkEmpty("ToolCalls(a)", len(tc), err)
	au, err := s.AuditLog(ctx, "")
	checkEmpty("AuditLog()", len(au), err)
	sh, err := s.Shots(ctx, "a")
	checkEmpty("Shots(a)", len(sh), err)
	if a, err := s.Approval(ctx, "q"); err != nil || a.Status != store.ApprovalPending {
		t.Errorf("Approval(q) after a bad Decide = %q, %v, want pending", a.Status, err)
	}
	if _, err := s.Approval(ctx, "p"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Approval(p) after a bad PutApproval = %v, want ErrNotFound", err)
	}
	// A failed append used no sequence number.
	e := &store.Event{Session: "a", Type: "ok"}
	if err := s.AppendEvent(ctx, e); err != nil || e.Seq != 1 {
		t.Errorf("AppendEvent() after a failed one: Seq %d, %v, want 1, nil", e.Seq, err)
	}
}

// testConcurrentAppend appends events and messages to two sessions from
// many goroutines over two stores sharing one database, as two server
// processes would: each stream is 1..N, without gaps or duplicates.
func testConcurrentAppend(t *testing.T, dsn string) {
	ctx := t.Context()
	stores := []store.Store{open(t, dsn), open(t, dsn)}
	sessions := []string{"a", "b"}
	mustCreate(t, stores[0], sessions...)
	const goroutines, each = 8, 15

	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			s := stores[g%2]
			for i := range each {
				sess := sessions[(g+i)%2]
				e := &store.Event{Session: sess, Type: "tick", Data: json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))}
				if err := s.AppendEvent(ctx, e); err != nil {
					errs <- fmt.Errorf("AppendEvent(goroutine %d, %d) = %w", g, i, err)
					return
				}
				if i%3 == 0 {
					m := &store.Message{Session: sess, Role: "user", Content: json.RawMessage(`"x"`)}
					if err := s.AppendMessage(ctx, m); err != nil {
						errs <- fmt.Errorf("AppendMessage(goroutine %d, %d) = %w", g, i, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	total := 0
	for _, sess := range sessions {
		evs, err := stores[1].Events(ctx, sess, 0)
		if err != nil {
			t.Fatalf("Events(%s) = %v", sess, err)
		}
		total += len(evs)
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("Events(%s)[%d].Seq = %d, want %d: a gap or a duplicate", sess, i, e.Seq, i+1)
			}
		}
		ms, err := stores[0].Messages(ctx, sess)
		if err != nil {
			t.Fatalf("Messages(%s) = %v", sess, err)
		}
		for i, m := range ms {
			if m.Seq != int64(i+1) {
				t.Fatalf("Messages(%s)[%d].Seq = %d, want %d: a gap or a duplicate", sess, i, m.Seq, i+1)
			}
		}
	}
	if total != goroutines*each {
		t.Errorf("events stored = %d, want %d", total, goroutines*each)
	}
	// Each goroutine's own events are in the order it appended them.
	last := map[string]int{}
	for _, sess := range sessions {
		evs, _ := stores[0].Events(ctx, sess, 0)
		for _, e := range evs {
			var d struct{ G, I int }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatalf("event data %s: %v", e.Data, err)
			}
			k := fmt.Sprint(d.G, sess)
			if prev, ok := last[k]; ok && d.I <= prev {
				t.Errorf("session %s: goroutine %d's event %d stored after its event %d", sess, d.G, d.I, prev)
			}
			last[k] = d.I
		}
	}
}

// testReopen checks that everything is there after Close and Open.
func testReopen(t *testing.T, dsn string) {
	ctx := t.Context()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	mustCreate(t, s, "a")
	for range 3 {
		if err := s.AppendEvent(ctx, &store.Event{Session: "a", Type: "x"}); err != nil {
			t.Fatalf("AppendEvent() = %v", err)
		}
	}
	if err := s.PutApproval(ctx, newApproval("p", "a", at(0))); err != nil {
		t.Fatalf("PutApproval() = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	s = open(t, dsn)
	if got, err := s.Session(ctx, "a"); err != nil || got.Title != "title of a" {
		t.Errorf("Session(a) after reopening = %+v, %v", got, err)
	}
	if a, err := s.Approval(ctx, "p"); err != nil || a.Status != store.ApprovalPending {
		t.Errorf("Approval(p) after reopening = %q, %v, want pending", a.Status, err)
	}
	e := &store.Event{Session: "a", Type: "x"}
	if err := s.AppendEvent(ctx, e); err != nil || e.Seq != 4 {
		t.Errorf("AppendEvent() after reopening: Seq %d, %v, want 4, nil", e.Seq, err)
	}
}

// testConcurrentOpen opens a new database from several goroutines at once,
// as replicas starting together do: the schema is created once.
func testConcurrentOpen(t *testing.T, dsn string) {
	const n = 4
	stores := make([]store.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = store.Open(t.Context(), dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open() %d of %d at once = %v", i, n, err)
			continue
		}
		defer stores[i].Close()
	}
	if t.Failed() {
		return
	}
	mustCreate(t, stores[0], "a")
	if _, err := stores[n-1].Session(t.Context(), "a"); err != nil {
		t.Errorf("Session(a) through another store = %v", err)
	}
}

// testCanceled checks that a canceled context fails calls instead of
// blocking, and stores nothing.
func testCanceled(t *testing.T, dsn string) {
	s := open(t, dsn)
	mustCreate(t, s, "a")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.AppendEvent(ctx, &store.Event{Session: "a", Type: "x"}); err == nil {
		t.Errorf("AppendEvent(canceled) = nil, want an error")
	}
	if _, err := s.Events(ctx, "a", 0); err == nil {
		t.Errorf("Events(canceled) = nil error, want an error")
	}
	if evs, err := s.Events(t.Context(), "a", 0); err != nil || len(evs) != 0 {
		t.Errorf("Events(a) after a canceled append = %v, %v, want none", evs, err)
	}
}
