package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/store/pgtest"
	"github.com/spotter-harness/spotter/web"
)

// readyCode is what a replica's /readyz answers.
func readyCode(t *testing.T, r *inProcessReplica) int {
	t.Helper()
	resp, err := http.Get(r.http.URL + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// PostgreSQL restarted (pg_ctl restart -m fast) under two replicas with
// live sessions: both replicas turn unready while it is down and ready
// when it is back; a call made during the outage waits for it and is
// answered once stored; an approval pending across it is decided after
// it; and nothing is lost: every call's result is there, every event
// stream is gap-free, and the sessions go on.
func TestPostgresRestartUnderSessions(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 restarts PostgreSQL under the replicas")
	}
	t.Parallel()
	pg := pgtest.StartServer(t)
	dsn, data := pgtest.NewDB(t, pg.DSN), t.TempDir()
	// A lease long enough that the outage does not fence the replicas.
	a := newInProcessReplicaWith(t, "a", dsn, data, web.Retention{}, 20*time.Second)
	b := newInProcessReplicaWith(t, "b", dsn, data, web.Retention{}, 20*time.Second)
	e := &env{t: t, base: a.http.URL}
	click := func(id string) any {
		return anthropictest.ToolUse(id, "computer", map[string]any{"action": "left_click", "coordinate": []int{30, 40}})
	}
	calls := e.liveExec(3) // c0..c2
	supervised := e.execSession("anthropic", map[string]any{"supervise": "all"})
	if code, a := e.execPost("/executor/sessions/"+supervised+"/call?wait=0s", click("held")); code != http.StatusAccepted {
		t.Fatalf("a supervised call = %d %+v, want 202", code, a)
	}
	var approval string
	until(t, "the supervised call's approval", func() bool {
		var l struct{ Approvals []struct{ ID string } }
		e.getJSON("/approvals?status=pending&session="+supervised, &l)
		if len(l.Approvals) == 1 {
			approval = l.Approvals[0].ID
		}
		return approval != ""
	})
	for _, r := range []*inProcessReplica{a, b} {
		until(t, "the replicas to be ready", func() bool { return readyCode(t, r) == http.StatusOK })
	}

	t0 := time.Now()
	pg.Stop()
	for _, r := range []*inProcessReplica{a, b} {
		until(t, "readiness to drop with the database", func() bool { return readyCode(t, r) == http.StatusServiceUnavailable })
	}
	dropped := time.Since(t0)
	type answer struct {
		code int
		a    execAnswer
	}
	during := make(chan answer, 1)
	go func() {
		code, a := e.execPost("/executor/sessions/"+calls+"/call?wait=60s", click("during"))
		during <- answer{code, a}
	}()
	pg.Start()
	restarted := time.Since(t0)
	for _, r := range []*inProcessReplica{a, b} {
		until(t, "readiness to return with the database", func() bool { return readyCode(t, r) == http.StatusOK })
	}
	t.Logf("readiness dropped %v after the stop; the database was back after %v, both replicas ready after %v",
		dropped.Round(time.Millisecond), restarted.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	if got := <-during; got.code != http.StatusOK || got.a.Error != "" {
		t.Errorf("the call made during the outage = %d %+v, want it answered once stored", got.code, got.a)
	}
	// The approval pending across the restart is decided, and its call
	// runs.
	eb := &env{t: t, base: b.http.URL}
	postJSON(t, eb, "/approvals/"+approval, map[string]any{"decision": "approve"}, http.StatusOK, nil)
	var held execAnswer
	eb.getJSON("/executor/sessions/"+supervised+"/calls/held?wait=60s", &held)
	if held.Status != "done" || held.Error != "" {
		t.Errorf("the approved call after the restart = %+v, want done", held)
	}
	// Nothing lost: every result, and the sessions go on.
	for i := range 3 {
		var r execAnswer
		eb.getJSON(fmt.Sprintf("/executor/sessions/%s/calls/c%d?wait=0s", calls, i), &r)
		if r.Status != "done" {
			t.Errorf("call c%d after the restart = %+v, want its result", i, r)
		}
	}
	if code, r := e.execPost("/executor/sessions/"+calls+"/call?wait=60s", click("after")); code != http.StatusOK || r.Error != "" {
		t.Errorf("a call after the restart = %d %+v", code, r)
	}
	for _, id := range []string{calls, supervised} {
		evs := checkSeq(t, e, id)
		seen := map[string]int{}
		for _, ev := range evs {
			if ev.Type == "tool_result" {
				seen[ev.field("toolCallId")]++
			}
		}
		want := []string{"held"}
		if id == calls {
			want = []string{"c0", "c1", "c2", "during", "after"}
		}
		for _, call := range want {
			if seen[call] != 1 {
				t.Errorf("session %s: the stored stream has %d results of %s, want one", id, seen[call], call)
			}
		}
	}
}
