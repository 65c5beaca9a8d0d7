package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
)

// newRequest is a request of session s for call c, due in a minute.
func newRequest(s, c string, index int) approvals.Request {
	now := time.Now()
	return approvals.Request{Session: s, CallID: c, Index: index, Rule: "purchase", Reason: "buying",
		Action: clickAt(1, 1), Created: now, Deadline: now.Add(time.Minute)}
}

// ask starts q.Ask in a goroutine and waits until the request is pending.
func ask(t *testing.T, ctx context.Context, q *approvals.Queue, r approvals.Request) (approvals.Request, <-chan result) {
	t.Helper()
	sctx, stop := context.WithCancel(t.Context())
	defer stop()
	events := q.Subscribe(sctx)
	out := make(chan result, 1)
	go func() {
		got, err := q.Ask(ctx, r)
		out <- result{got, err}
	}()
	for ev := range events {
		if ev.Type == approvals.EventRequest && ev.Request.CallID == r.CallID && ev.Request.Index == r.Index {
			return ev.Request, out
		}
	}
	t.Fatal("the subscription ended before the request was pending")
	return approvals.Request{}, nil
}

func TestDecideErrors(t *testing.T) {
	q := approvals.NewQueue(approvals.QueueConfig{})
	req, done := ask(t, t.Context(), q, newRequest("s", "c1", 0))
	edit := clickAt(2, 2)
	tests := []struct {
		name string
		id   string
		v    approvals.Verdict
		want error
	}{
		{"unknown id", "nope", approvals.Verdict{Kind: approvals.Approve, By: "ann"}, approvals.ErrNotFound},
		{"no one decided", req.ID, approvals.Verdict{Kind: approvals.Approve}, approvals.ErrBadVerdict},
		{"unknown kind", req.ID, approvals.Verdict{Kind: "maybe", By: "ann"}, approvals.ErrBadVerdict},
		{"edit without action", req.ID, approvals.Verdict{Kind: approvals.Edit, By: "ann"}, approvals.ErrBadVerdict},
		{"approve with action", req.ID, approvals.Verdict{Kind: approvals.Approve, By: "ann", Edit: &edit}, approvals.ErrBadVerdict},
	}
	for _, tt := range tests {
		if err := q.Decide(tt.id, tt.v); !errors.Is(err, tt.want) {
			t.Errorf("Decide(%s) = %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := q.Decide(req.ID, approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "no"}); err != nil {
		t.Fatalf("Decide() = %v", err)
	}
	if res := <-done; res.err != nil || res.req.Verdict == nil || res.req.Verdict.Reason != "no" {
		t.Errorf("Ask() = %+v, %v; want the denial", res.req, res.err)
	}
	if err := q.Decide(req.ID, approvals.Verdict{Kind: approvals.Approve, By: "bob"}); !errors.Is(err, approvals.ErrDecided) {
		t.Errorf("Decide() a second time = %v, want ErrDecided", err)
	}
	if _, err := q.Get(req.ID); !errors.Is(err, approvals.ErrDecided) {
		t.Errorf("Get(decided) = %v, want ErrDecided", err)
	}
	if _, err := q.Get("nope"); !errors.Is(err, approvals.ErrNotFound) {
		t.Errorf("Get(unknown) = %v, want ErrNotFound", err)
	}

	// An edit must be a valid action inside the frame's image.
	r := newRequest("s", "c3", 0)
	r.Frame = frame
	framed, done := ask(t, t.Context(), q, r)
	outside, typed := clickAt(700, 10), clickAt(1, 1)
	typed.Text = "x"
	for _, bad := range []actions.Action{outside, typed} {
		if err := q.Decide(framed.ID, approvals.Verdict{Kind: approvals.Edit, By: "ann", Edit: &bad}); !errors.Is(err, approvals.ErrBadVerdict) {
			t.Errorf("Decide(edit to %v) = %v, want ErrBadVerdict", bad.LogValue(), err)
		}
	}
	inside := clickAt(639, 399)
	if err := q.Decide(framed.ID, approvals.Verdict{Kind: approvals.Edit, By: "ann", Edit: &inside}); err != nil {
		t.Errorf("Decide(edit inside the image) = %v", err)
	}
	<-done

	// Safety checks can be approved or denied, not edited.
	sc, done := ask(t, t.Context(), q, newRequest("s", "c2", -1))
	if err := q.Decide(sc.ID, approvals.Verdict{Kind: approvals.Edit, By: "ann", Edit: &edit}); !errors.Is(err, approvals.ErrBadVerdict) {
		t.Errorf("Decide(edit safety checks) = %v, want ErrBadVerdict", err)
	}
	if err := q.Decide(sc.ID, approvals.Verdict{Kind: approvals.Approve, By: "ann"}); err != nil {
		t.Errorf("Decide(approve safety checks) = %v", err)
	}
	<-done
}

func TestDecideAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var audit []approvals.Verdict
		q := approvals.NewQueue(approvals.QueueConfig{OnDecision: func(_ approvals.Request, v approvals.Verdict) error {
			audit = append(audit, v)
			return nil
		}})
		if err := q.Restore([]approvals.Request{{ID: "r1", Session: "s", CallID: "c", Created: time.Now(),
			Deadline: time.Now().Add(time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute) // fake time: nobody is waiting, the deadline passes
		if err := q.Decide("r1", approvals.Verdict{Kind: approvals.Approve, By: "ann"}); !errors.Is(err, approvals.ErrExpired) {
			t.Errorf("Decide() after the deadline = %v, want ErrExpired", err)
		}
		if len(audit) != 1 || audit[0].By != "timeout" {
			t.Errorf("audit = %+v, want one denial by timeout", audit)
		}
	})
}

func TestExpireDeniesAbandonedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var audit []string
		q := approvals.NewQueue(approvals.QueueConfig{OnDecision: func(r approvals.Request, v approvals.Verdict) error {
			audit = append(audit, r.ID+" "+v.By+" "+v.Reason)
			return nil
		}})
		ctx, cancel := context.WithCancel(t.Context())
		r := newRequest("s", "c1", 0)
		r.ID = "r1"
		go func() { _, _ = q.Ask(ctx, r) }()
		synctest.Wait()
		cancel() // the session ended; nobody waits for r1 any more
		synctest.Wait()
		if n := q.Expire(); n != 0 || len(q.Pending()) != 1 {
			t.Errorf("Expire() before the deadline = %d, pending %d; want 0 and 1", n, len(q.Pending()))
		}
		time.Sleep(time.Minute)
		if n := len(q.Pending()); n != 0 {
			t.Errorf("Pending() past the deadline lists %d requests, want 0", n)
		}
		if n := q.Expire(); n != 1 {
			t.Errorf("Expire() = %d, want 1", n)
		}
		want := []string{"r1 timeout no decision within 1m0s"}
		if fmt.Sprint(audit) != fmt.Sprint(want) {
			t.Errorf("audit = %q, want %q", audit, want)
		}
	})
}

func TestHooksCanRefuse(t *testing.T) {
	broken := errors.New("disk full")
	q := approvals.NewQueue(approvals.QueueConfig{OnRequest: func(approvals.Request) error { return broken }})
	if _, err := q.Ask(t.Context(), newRequest("s", "c1", 0)); !errors.Is(err, broken) {
		t.Errorf("Ask() with a failing OnRequest = %v, want its error", err)
	}
	if n := len(q.Pending()); n != 0 {
		t.Errorf("Pending() = %d after a refused request, want 0", n)
	}

	fail := true
	q = approvals.NewQueue(approvals.QueueConfig{OnDecision: func(approvals.Request, approvals.Verdict) error {
		if fail {
			return broken
		}
		return nil
	}})
	req, done := ask(t, t.Context(), q, newRequest("s", "c1", 0))
	if err := q.Decide(req.ID, approvals.Verdict{Kind: approvals.Approve, By: "ann"}); !errors.Is(err, broken) {
		t.Errorf("Decide() with a failing audit = %v, want its error", err)
	}
	if _, err := q.Get(req.ID); err != nil {
		t.Errorf("Get() after an unaudited decision = %v, want it still pending", err)
	}
	fail = false
	if err := q.Decide(req.ID, approvals.Verdict{Kind: approvals.Approve, By: "ann"}); err != nil {
		t.Errorf("Decide() = %v", err)
	}
	<-done
}

func TestRestoreReattaches(t *testing.T) {
	now := time.Now()
	saved := []approvals.Request{
		{ID: "r1", Session: "s", CallID: "c1", Index: 0, Rule: "purchase", Created: now, Deadline: now.Add(time.Hour)},
		{ID: "r2", Session: "s", CallID: "c2", Index: 1, Rule: "delete", Created: now, Deadline: now.Add(time.Hour),
			Verdict: &approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "no", At: now}},
	}
	var asked []string
	q := approvals.NewQueue(approvals.QueueConfig{OnRequest: func(r approvals.Request) error {
		asked = append(asked, r.ID)
		return nil
	}})
	if err := q.Restore(saved); err != nil {
		t.Fatalf("Restore() = %v", err)
	}
	if p := q.Pending(); len(p) != 1 || p[0].ID != "r1" {
		t.Fatalf("Pending() after Restore = %+v, want r1", p)
	}
	// The restarted session asks again for c1: it waits for r1.
	out := make(chan result, 1)
	go func() {
		got, err := q.Ask(t.Context(), newRequest("s", "c1", 0))
		out <- result{got, err}
	}()
	if err := q.Decide("r1", approvals.Verdict{Kind: approvals.Approve, By: "ann"}); err != nil {
		t.Fatalf("Decide(r1) = %v", err)
	}
	if res := <-out; res.err != nil || res.req.ID != "r1" || res.req.Verdict.Kind != approvals.Approve {
		t.Errorf("Ask(c1) = %+v, %v; want r1 approved", res.req, res.err)
	}
	// c2 was decided before the restart: its asker gets the verdict at once.
	got, err := q.Ask(t.Context(), newRequest("s", "c2", 1))
	if err != nil || got.ID != "r2" || got.Verdict.Kind != approvals.Deny {
		t.Errorf("Ask(c2) = %+v, %v; want r2 denied", got, err)
	}
	if len(asked) != 0 {
		t.Errorf("OnRequest saw %v, want nothing: restored requests are not new", asked)
	}

	for _, bad := range [][]approvals.Request{
		{{ID: "", Deadline: now}},
		{{ID: "r9"}},
		{{ID: "r1", CallID: "x", Deadline: now}},
		{{ID: "a", CallID: "k", Deadline: now}, {ID: "b", CallID: "k", Deadline: now}},
	} {
		if err := q.Restore(bad); err == nil {
			t.Errorf("Restore(%+v) = nil, want an error", bad)
		}
	}
}

func TestAskNeedsADeadline(t *testing.T) {
	q := approvals.NewQueue(approvals.QueueConfig{})
	if _, err := q.Ask(t.Context(), approvals.Request{CallID: "c"}); err == nil {
		t.Error("Ask() without a deadline = nil error")
	}
}

func TestSubscriberThatFallsBehindIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := approvals.NewQueue(approvals.QueueConfig{})
		events := q.Subscribe(t.Context())
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for i := range 70 {
			wg.Go(func() { _, _ = q.Ask(ctx, newRequest("s", fmt.Sprint("c", i), 0)) })
		}
		synctest.Wait() // every ask is in the queue, waiting for a verdict
		if n := len(q.Pending()); n != 70 {
			t.Fatalf("Pending() with 70 askers waiting lists %d requests, want 70", n)
		}
		n := 0
		for range events {
			n++
		}
		if n != 64 {
			t.Errorf("a subscriber that read nothing got %d events before its channel closed, want 64", n)
		}
		cancel()
		wg.Wait()
	})
}

// TestConcurrentDecisions runs askers, deciders and readers at once; run
// it with -race. Every request gets exactly one verdict.
func TestConcurrentDecisions(t *testing.T) {
	var mu sync.Mutex
	audited := map[string]int{}
	q := approvals.NewQueue(approvals.QueueConfig{OnDecision: func(r approvals.Request, v approvals.Verdict) error {
		mu.Lock()
		audited[r.ID]++
		mu.Unlock()
		return nil
	}})
	const n = 50
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := q.Subscribe(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for i := range n {
		wg.Go(func() {
			r, err := q.Ask(t.Context(), newRequest("s", fmt.Sprint("c", i), 0))
			if err != nil || r.Verdict == nil {
				errs <- fmt.Errorf("Ask(c%d) = %+v, %v", i, r, err)
			}
		})
	}
	seen := 0
	for ev := range events {
		if ev.Type != approvals.EventRequest {
			continue
		}
		id := ev.Request.ID
		// Three deciders race for each request: exactly one wins.
		var wins sync.WaitGroup
		won := make(chan string, 3)
		for _, who := range []string{"ann", "bob", "cy"} {
			wins.Go(func() {
				err := q.Decide(id, approvals.Verdict{Kind: approvals.Approve, By: who})
				switch {
				case err == nil:
					won <- who
				case !errors.Is(err, approvals.ErrDecided):
					errs <- fmt.Errorf("Decide(%s) by %s = %v", id, who, err)
				}
			})
			wins.Go(func() { _ = q.Pending() })
		}
		wins.Wait()
		close(won)
		if got := len(won); got != 1 {
			errs <- fmt.Errorf("request %s was decided %d times", id, got)
		}
		if seen++; seen == n {
			break
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for id, c := range audited {
		if c != 1 {
			t.Errorf("request %s audited %d times, want 1", id, c)
		}
	}
	if len(audited) != n {
		t.Errorf("%d requests audited, want %d", len(audited), n)
	}
}

// A client told of a request by OnEvent can decide it at once: the request
// is in the queue by then, and its asker wakes only after OnEvent has told
// of the decision.
func TestOnEventOrder(t *testing.T) {
	var q *approvals.Queue
	var mu sync.Mutex
	var log []string
	decided := make(chan error, 1)
	q = approvals.NewQueue(approvals.QueueConfig{
		OnRequest: func(r approvals.Request) error {
			if _, err := q.Get(r.ID); !errors.Is(err, approvals.ErrNotFound) {
				t.Errorf("Get(%s) in OnRequest = %v, want ErrNotFound: it is persisted before it is queued", r.ID, err)
			}
			return nil
		},
		OnEvent: func(ev approvals.Event) {
			mu.Lock()
			log = append(log, string(ev.Type))
			mu.Unlock()
			if ev.Type != approvals.EventRequest {
				return
			}
			if _, err := q.Get(ev.Request.ID); err != nil {
				t.Errorf("Get(%s) in OnEvent = %v, want the pending request", ev.Request.ID, err)
			}
			// A client reacting at once, on another goroutine.
			go func() { decided <- q.Decide(ev.Request.ID, approvals.Verdict{Kind: approvals.Approve, By: "ann"}) }()
		},
	})
	got, err := q.Ask(t.Context(), newRequest("s", "c1", 0))
	if err != nil || got.Verdict == nil || got.Verdict.Kind != approvals.Approve {
		t.Fatalf("Ask() = %+v, %v, want an approval", got.Verdict, err)
	}
	if err := <-decided; err != nil {
		t.Errorf("Decide() right after the request event = %v, want nil", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"request", "decision"}; fmt.Sprint(log) != fmt.Sprint(want) {
		t.Errorf("OnEvent saw %v before Ask returned, want %v", log, want)
	}
}

// Restored requests are not announced again.
func TestRestoreIsQuiet(t *testing.T) {
	n := 0
	q := approvals.NewQueue(approvals.QueueConfig{OnEvent: func(approvals.Event) { n++ }})
	r := newRequest("s", "c1", 0)
	r.ID = "ap_1"
	if err := q.Restore([]approvals.Request{r}); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("OnEvent calls after Restore = %d, want 0", n)
	}
	if err := q.Decide("ap_1", approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "no"}); err != nil {
		t.Fatalf("Decide(restored) = %v", err)
	}
	if n != 1 {
		t.Errorf("OnEvent calls after Decide = %d, want 1", n)
	}
}

// A request for a call's provider safety checks has no action. It is
// stored as JSON (without "action"), restored from it after a restart,
// waited on again by the re-asked call, approved but never edited.
func TestSafetyCheckRequestRoundTrip(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	checks := []harness.SafetyCheck{{ID: "sc_1", Code: "malicious_instructions", Message: "The page may hold instructions."},
		{ID: "sc_2", Code: "irrelevant_domain", Message: "The domain is not the task's."}}
	safety := approvals.Request{Session: "s", CallID: "c1", Index: -1, Rule: approvals.RuleSafetyCheck, Reason: "a check",
		SafetyChecks: checks, Created: now, Deadline: now.Add(time.Hour)}

	var saved [][]byte
	q := approvals.NewQueue(approvals.QueueConfig{OnRequest: func(r approvals.Request) error {
		b, err := json.Marshal(r) // what a server persists
		saved = append(saved, b)
		return err
	}})
	ctx, stop := context.WithCancel(t.Context())
	events := q.Subscribe(ctx)
	done := make(chan result, 1)
	go func() {
		got, err := q.Ask(ctx, safety)
		done <- result{got, err}
	}()
	var req approvals.Request
	select {
	case ev := <-events:
		req = ev.Request
	case res := <-done:
		t.Fatalf("Ask(safety checks) = %v before it was pending, want it held", res.err)
	}
	stop() // the asker goes away, as at a shutdown
	if res := <-done; res.err == nil {
		t.Fatalf("Ask() after its context ended = %+v, want an error", res.req)
	}
	if len(saved) != 1 {
		t.Fatalf("OnRequest saw %d requests, want 1", len(saved))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(saved[0], &fields); err != nil {
		t.Fatalf("stored request %s: %v", saved[0], err)
	}
	if _, ok := fields["action"]; ok {
		t.Errorf("stored request %s has an action, want none", saved[0])
	}
	for _, want := range []string{`"index":-1`, `"code":"malicious_instructions"`, `"message":"The domain is not the task's."`} {
		if !strings.Contains(string(saved[0]), want) {
			t.Errorf("stored request %s lacks %s", saved[0], want)
		}
	}
	var restored approvals.Request
	if err := json.Unmarshal(saved[0], &restored); err != nil {
		t.Fatalf("json.Unmarshal(stored request) = %v", err)
	}
	if diff := cmp.Diff(req, restored); diff != "" {
		t.Errorf("restored request (-asked +restored):\n%s", diff)
	}

	// After a restart: a new queue, the request restored, the call asked
	// again.
	q2 := approvals.NewQueue(approvals.QueueConfig{})
	if err := q2.Restore([]approvals.Request{restored}); err != nil {
		t.Fatalf("Restore() = %v", err)
	}
	out := make(chan result, 1)
	go func() {
		got, err := q2.Ask(t.Context(), safety)
		out <- result{got, err}
	}()
	edit := clickAt(1, 1)
	if err := q2.Decide(req.ID, approvals.Verdict{Kind: approvals.Edit, By: "ann", Edit: &edit}); !errors.Is(err, approvals.ErrBadVerdict) {
		t.Errorf("Decide(edit of safety checks) = %v, want ErrBadVerdict", err)
	}
	if err := q2.Decide(req.ID, approvals.Verdict{Kind: approvals.Approve, By: "ann"}); err != nil {
		t.Fatalf("Decide(approve) = %v", err)
	}
	if res := <-out; res.err != nil || res.req.ID != req.ID || res.req.Verdict.Kind != approvals.Approve ||
		!cmp.Equal(res.req.SafetyChecks, checks) {
		t.Errorf("Ask() re-attached = %+v, %v; want %s approved with its checks", res.req, res.err, req.ID)
	}
}
