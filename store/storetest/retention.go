package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/store"
)

// fill gives session id a record of every kind retention deletes, and an
// audit entry, which it keeps.
func fill(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := t.Context()
	errs := []error{
		s.AppendEvent(ctx, &store.Event{Session: id, Type: "x", Data: payload}),
		s.AppendMessage(ctx, &store.Message{Session: id, Role: "user", Content: payload}),
		s.PutToolCall(ctx, store.ToolCall{Session: id, ID: "c1", Name: "computer", Status: store.CallDone}),
		s.PutApproval(ctx, newApproval("ap-"+id, id, at(0))),
		s.PutShot(ctx, store.Shot{Session: id, Name: "t1/shots/0001.png", FrameID: "f1", Bytes: 10}),
		s.AppendAudit(ctx, &store.Audit{Actor: "system", Action: "x", Session: id}),
	}
	for _, err := range errs {
		if err != nil {
			t.Fatalf("fill %s: %v", id, err)
		}
	}
}

// testRetention deletes sessions whole: every record but the audit log,
// and only while they are as chosen; the others keep everything.
func testRetention(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "done", "live", "keep")
	for _, id := range []string{"done", "live", "keep"} {
		fill(t, s, id)
	}
	done, err := s.Session(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	done.Status = store.StatusStopped
	if err := s.UpdateSession(ctx, done); err != nil {
		t.Fatal(err)
	}
	live, _ := s.Session(ctx, "live") // running

	if err := s.DeleteSession(ctx, "live", live.Updated, store.Finished...); !errors.Is(err, store.ErrConflict) {
		t.Errorf("DeleteSession(a running session) = %v, want ErrConflict", err)
	}
	if err := s.DeleteSession(ctx, "done", done.Updated.Add(-time.Second), store.Finished...); !errors.Is(err, store.ErrConflict) {
		t.Errorf("DeleteSession(updated since) = %v, want ErrConflict", err)
	}
	if err := s.DeleteSession(ctx, "nope", done.Updated, store.Finished...); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteSession(nope) = %v, want ErrNotFound", err)
	}
	if err := s.DeleteSession(ctx, "done", done.Updated); err == nil {
		t.Errorf("DeleteSession(no statuses) = nil, want an error")
	}
	if _, err := s.Deleted(ctx, "done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Deleted(done) before it was = %v, want ErrNotFound", err)
	}
	before := now(t)
	if err := s.DeleteSession(ctx, "done", done.Updated, store.Finished...); err != nil {
		t.Fatalf("DeleteSession(done) = %v", err)
	}
	if _, err := s.Session(ctx, "done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session(done) after DeleteSession = %v, want ErrNotFound", err)
	}
	for name, fn := range map[string]func(string) (int, error){
		"Events":    func(id string) (int, error) { l, err := s.Events(ctx, id, 0); return len(l), err },
		"Messages":  func(id string) (int, error) { l, err := s.Messages(ctx, id); return len(l), err },
		"ToolCalls": func(id string) (int, error) { l, err := s.ToolCalls(ctx, id); return len(l), err },
		"Shots":     func(id string) (int, error) { l, err := s.Shots(ctx, id); return len(l), err },
		"Approvals": func(id string) (int, error) {
			l, err := s.Approvals(ctx, store.ApprovalFilter{Session: id})
			return len(l), err
		},
	} {
		if n, err := fn("done"); n != 0 || (err != nil && !errors.Is(err, store.ErrNotFound)) {
			t.Errorf("%s(done) after DeleteSession = %d, %v, want none", name, n, err)
		}
		for _, id := range []string{"live", "keep"} {
			if n, err := fn(id); n != 1 || err != nil {
				t.Errorf("%s(%s) after another session was deleted = %d, %v, want its one record", name, id, n, err)
			}
		}
	}
	if _, err := s.Owner(ctx, "done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Owner(done) after DeleteSession = %v, want ErrNotFound", err)
	}
	if au, err := s.AuditLog(ctx, "done"); err != nil || len(au) != 1 {
		t.Errorf("AuditLog(done) after DeleteSession = %d entries, %v, want the one kept", len(au), err)
	}
	if ss, err := s.Sessions(ctx); err != nil || len(ss) != 2 {
		t.Errorf("Sessions() after DeleteSession = %d, %v, want the other two", len(ss), err)
	}
	when, err := s.Deleted(ctx, "done")
	if err != nil || when.Before(before) || when.Location() != time.UTC {
		t.Errorf("Deleted(done) = %v, %v, want a UTC time from %v on", when, err, before)
	}
	if ts, err := s.DeletedSince(ctx, before.Add(-time.Second)); err != nil || len(ts) != 1 || ts[0].Session != "done" {
		t.Errorf("DeletedSince(before) = %+v, %v, want done", ts, err)
	}
	if ts, err := s.DeletedSince(ctx, when); err != nil || len(ts) != 0 {
		t.Errorf("DeletedSince(its deletion) = %+v, %v, want none", ts, err)
	}
	// The same id can be created again (an id is random; this is the
	// store's contract, not a use).
	if err := s.CreateSession(ctx, newSession("done", at(0))); err != nil {
		t.Errorf("CreateSession(done) after its deletion = %v", err)
	}
	if n, err := s.PruneDeleted(ctx, when.Add(time.Microsecond)); err != nil || n != 1 {
		t.Errorf("PruneDeleted() = %d, %v, want 1", n, err)
	}
	if _, err := s.Deleted(ctx, "done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Deleted(done) after PruneDeleted = %v, want ErrNotFound", err)
	}
}

// now is the store's idea of now, to the microsecond.
func now(t *testing.T) time.Time {
	t.Helper()
	return time.Now().Truncate(time.Microsecond).UTC()
}

// testLeases checks that one holder at a time holds a lease, renews it,
// and loses it once it lapses or is released; holders racing for a free
// lease over two stores get it once.
func testLeases(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	ttl := 10 * time.Second
	acquire := func(holder string, d time.Duration) bool {
		t.Helper()
		ok, err := s.AcquireLease(ctx, "retention", holder, at(d), at(d+ttl))
		if err != nil {
			t.Fatalf("AcquireLease(%s at %v) = %v", holder, d, err)
		}
		return ok
	}
	if !acquire("a", 0) {
		t.Fatal("AcquireLease(a) of a free lease = false")
	}
	if acquire("b", 5*time.Second) {
		t.Error("AcquireLease(b) while a holds it = true")
	}
	if !acquire("a", 8*time.Second) {
		t.Error("AcquireLease(a) renewing its own = false")
	}
	if acquire("b", 17*time.Second) {
		t.Error("AcquireLease(b) within a's renewed lease = true")
	}
	if !acquire("b", 18*time.Second) {
		t.Error("AcquireLease(b) once a's lease lapsed = false")
	}
	if err := s.ReleaseLease(ctx, "retention", "a"); err != nil {
		t.Errorf("ReleaseLease(a, not its holder) = %v", err)
	}
	if acquire("a", 19*time.Second) {
		t.Error("AcquireLease(a) after a release by a non-holder = true")
	}
	if err := s.ReleaseLease(ctx, "retention", "b"); err != nil {
		t.Errorf("ReleaseLease(b) = %v", err)
	}
	if !acquire("a", 20*time.Second) {
		t.Error("AcquireLease(a) after b released it = false")
	}
	if _, err := s.AcquireLease(ctx, "x", "a", at(time.Second), at(0)); err == nil {
		t.Error("AcquireLease(ending before it starts) = nil error")
	}

	// Racing for a free lease over two stores: one wins.
	other := open(t, dsn)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		st := s
		if i%2 == 1 {
			st = other
		}
		wg.Go(func() {
			ok, err := st.AcquireLease(ctx, "race", string(rune('a'+i)), at(0), at(ttl))
			if err != nil {
				t.Errorf("AcquireLease(race) = %v", err)
			}
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d holders won a free lease at once, want 1", won)
	}
}
