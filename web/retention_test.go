package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/store/pgtest"
	"github.com/spotter-harness/spotter/web"
)

// finishedExec makes an executor session with calls calls (their
// screenshots on disk) and DELETEs it: it is stopped.
func (e *env) finishedExec(calls int) string {
	e.t.Helper()
	id := e.liveExec(calls)
	resp := e.request("DELETE", "/executor/sessions/"+id, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("DELETE /executor/sessions/%s = %d", id, resp.StatusCode)
	}
	return id
}

// liveExec makes an executor session with calls calls, left open.
func (e *env) liveExec(calls int) string {
	e.t.Helper()
	id := e.execSession("anthropic", nil)
	for i := range calls {
		call := anthropictest.ToolUse(fmt.Sprintf("c%d", i), "computer", map[string]any{"action": "left_click", "coordinate": []int{10 + i, 20}})
		if code, a := e.execPost("/executor/sessions/"+id+"/call?wait=30s", call); code != http.StatusOK || a.Error != "" {
			e.t.Fatalf("call %d of %s = %d %q", i, id, code, a.Error)
		}
	}
	return id
}

// status is the code GET path answers, with its body.
func (e *env) status(path string) (int, string) {
	e.t.Helper()
	resp := e.request("GET", path, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sessionBytes adds up the files of a session's directory, as retention
// counts them.
func sessionBytes(t *testing.T, data, id string) int64 {
	t.Helper()
	n := dirBytesOf(filepath.Join(data, "sessions", id))
	if n == 0 {
		t.Fatalf("session %s has no files", id)
	}
	return n
}

// checkDeleted checks that session id is gone whole: its requests answer
// 410, it is not listed, its files are gone, and the audit log says why.
func (e *env) checkDeleted(id, why string) {
	e.t.Helper()
	for _, path := range []string{"/session/" + id, "/session/" + id + "/events?after=0", "/session/" + id + "/shots/t1/shots/0001.png"} {
		if code, body := e.status(path); code != http.StatusGone || !strings.Contains(body, "retention") {
			e.t.Errorf("GET %s of a deleted session = %d %s, want 410 saying retention deleted it", path, code, body)
		}
	}
	if _, err := os.Stat(filepath.Join(e.data, "sessions", id)); !os.IsNotExist(err) {
		e.t.Errorf("files of deleted session %s: %v, want none", id, err)
	}
	if entries, retain := e.retainAudit(id); retain == nil || retain.Detail["deleted"] != why {
		e.t.Errorf("audit of deleted session %s = %+v, want a retain entry saying %s", id, entries, why)
	}
}

// auditEntry is an entry of GET /audit, as the retention tests read it.
type auditEntry struct {
	Action string
	Detail map[string]any
}

// retainAudit returns session id's audit entries and its retain entry,
// nil while there is none.
func (e *env) retainAudit(id string) ([]auditEntry, *auditEntry) {
	e.t.Helper()
	var audit struct{ Audit []auditEntry }
	e.getJSON("/audit?session="+id, &audit)
	if i := slices.IndexFunc(audit.Audit, func(a auditEntry) bool { return a.Action == "retain" }); i >= 0 {
		return audit.Audit, &audit.Audit[i]
	}
	return audit.Audit, nil
}

// checkKept checks that session id is whole: answered, listed, its
// files there.
func (e *env) checkKept(id string, files int64) {
	e.t.Helper()
	if code, body := e.status("/session/" + id); code != http.StatusOK {
		e.t.Errorf("GET /session/%s of a kept session = %d %s", id, code, body)
	}
	if got := sessionBytes(e.t, e.data, id); got != files {
		e.t.Errorf("files of kept session %s: %d bytes, want %d as before", id, got, files)
	}
}

func listed(t *testing.T, e *env) []string {
	var l struct{ Sessions []struct{ ID string } }
	e.getJSON("/sessions", &l)
	var ids []string
	for _, s := range l.Sessions {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// Retention by age deletes every finished session (stopped, failed, idle)
// unchanged for the age, whole, and nothing else: a session still open
// keeps its records and files, and works on.
func TestRetentionAge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true}, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Nothing to do.")}})
	resp, evs := e.stream("PUT", "/session", spec("Say so.", nil))
	idle := resp.Header.Get("X-Session-Id")
	if k := kinds(evs); k[len(k)-1] != "turn_stop:end_turn" {
		t.Fatalf("agent session: %v, want it idle", k)
	}
	stopped := e.finishedExec(2)
	live := e.liveExec(2)
	liveBytes := sessionBytes(t, e.data, live)

	r := web.Retention{MaxAge: time.Hour}
	// Nothing is an hour old yet.
	if p, err := web.RetainNow(t.Context(), e.srv, r, time.Now()); err != nil || !p.Held || len(p.Deleted) != 0 {
		t.Fatalf("RetainNow(now) = %+v, %v, want the lease held and nothing deleted", p, err)
	}
	p, err := web.RetainNow(t.Context(), e.srv, r, time.Now().Add(2*time.Hour))
	want := []string{idle, stopped}
	slices.Sort(want)
	slices.Sort(p.Deleted)
	if err != nil || !slices.Equal(p.Deleted, want) || p.Failed != 0 {
		t.Fatalf("RetainNow(in 2h) = %+v, %v, want %v deleted", p, err, want)
	}
	e.checkDeleted(idle, "age")
	e.checkDeleted(stopped, "age")
	e.checkKept(live, liveBytes)
	if got := listed(t, e); !slices.Equal(got, []string{live}) {
		t.Errorf("GET /sessions after retention = %v, want [%s]", got, live)
	}
	// The open session works on.
	call := anthropictest.ToolUse("after", "computer", map[string]any{"action": "screenshot"})
	if code, a := e.execPost("/executor/sessions/"+live+"/call?wait=30s", call); code != http.StatusOK || a.Error != "" {
		t.Errorf("a call of the kept session after retention = %d %q", code, a.Error)
	}
	// A deleted agent session takes no message.
	rq := e.request("POST", "/session/"+idle, map[string]any{"messages": []map[string]any{{"role": "user", "content": "again"}}})
	rq.Body.Close()
	if rq.StatusCode != http.StatusGone {
		t.Errorf("POST /session/%s after its deletion = %d, want 410", idle, rq.StatusCode)
	}
}

// Retention by size deletes the oldest finished sessions until the
// sessions' files fit, and no more; sessions still open are never
// deleted, even when they alone hold more.
func TestRetentionSize(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	ids := []string{e.finishedExec(1), e.finishedExec(2), e.finishedExec(1)}
	live := e.liveExec(1)
	size := map[string]int64{}
	var total int64
	for _, id := range append(slices.Clone(ids), live) {
		size[id] = sessionBytes(t, e.data, id)
		total += size[id]
	}
	// The oldest must go for the rest to fit; then the rest fit.
	p, err := web.RetainNow(t.Context(), e.srv, web.Retention{MaxBytes: total - size[ids[0]]}, time.Now())
	if err != nil || !slices.Equal(p.Deleted, ids[:1]) || p.Remaining != total-size[ids[0]] {
		t.Fatalf("RetainNow(size) = %+v, %v, want %s deleted and %d bytes left", p, err, ids[0], total-size[ids[0]])
	}
	e.checkDeleted(ids[0], "size")
	for _, id := range []string{ids[1], ids[2], live} {
		e.checkKept(id, size[id])
	}
	// A limit the open session alone exceeds: every finished one goes,
	// the open one stays.
	p, err = web.RetainNow(t.Context(), e.srv, web.Retention{MaxBytes: 1}, time.Now())
	if err != nil || !slices.Equal(p.Deleted, ids[1:]) || p.Remaining != size[live] {
		t.Fatalf("RetainNow(1 byte) = %+v, %v, want %v deleted and %d bytes left", p, err, ids[1:], size[live])
	}
	e.checkDeleted(ids[1], "size")
	e.checkDeleted(ids[2], "size")
	e.checkKept(live, size[live])
}

// spotter serve --retain runs in the background: a finished session goes
// within a round of its age, an open one stays.
func TestRetentionLoop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true, retention: web.Retention{MaxAge: 200 * time.Millisecond, Every: 50 * time.Millisecond}})
	live := e.liveExec(1)
	liveBytes := sessionBytes(t, e.data, live)
	stopped := e.finishedExec(1)
	// A deletion ends with its audit entry (after the records and the
	// files): the session answers 410 a moment before it.
	until(t, "retention to delete the stopped session", func() bool {
		_, retain := e.retainAudit(stopped)
		return retain != nil
	})
	e.checkDeleted(stopped, "age")
	e.checkKept(live, liveBytes)
}

// Retention runs on one replica at a time (the lease), and a replica
// that held a session another replica's retention deleted lets go of it.
func TestRetentionReplicas(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the replicas' retention (PostgreSQL)")
	}
	t.Parallel()
	dsn := pgtest.NewDB(t, pgtest.Start(t))
	data := t.TempDir()
	a := newInProcessReplicaWith(t, "a", dsn, data, web.Retention{}, 0)
	b := newInProcessReplicaWith(t, "b", dsn, data, web.Retention{}, 0)
	// An idle agent session, held in memory by its replica.
	ea := &env{t: t, base: a.http.URL, data: data}
	resp, evs := ea.stream("PUT", "/session", spec("Say done", nil))
	id, owner := resp.Header.Get("X-Session-Id"), resp.Header.Get(web.HeaderReplica)
	if k := kinds(evs); k[len(k)-1] != "turn_stop:end_turn" {
		t.Fatalf("agent session: %v, want it idle", k)
	}
	holder, other := a, b
	if owner == "b" {
		holder, other = b, a
	}
	if !web.Holds(holder.srv, id) {
		t.Fatalf("replica %s does not hold the session it created", owner)
	}
	r, later := web.Retention{MaxAge: time.Hour}, time.Now().Add(2*time.Hour)
	// The lease goes to the replica that asks first; the other one
	// does nothing while it runs.
	po, err := web.RetainNow(t.Context(), other.srv, r, later)
	if err != nil {
		t.Fatal(err)
	}
	ph, err := web.RetainNow(t.Context(), holder.srv, r, later)
	if err != nil {
		t.Fatal(err)
	}
	if !po.Held || ph.Held || !slices.Equal(po.Deleted, []string{id}) {
		t.Fatalf("retention rounds: %s %+v, then %s %+v; want the first to hold the lease and delete %s, the second not to",
			other.srv.Replica(), po, holder.srv.Replica(), ph, id)
	}
	// The round of the replica that held it let go of it.
	if web.Holds(holder.srv, id) {
		t.Errorf("replica %s still holds session %s after its round", holder.srv.Replica(), id)
	}
	for _, via := range []*inProcessReplica{holder, other} {
		e := &env{t: t, base: via.http.URL}
		if code, body := e.status("/session/" + id); code != http.StatusGone {
			t.Errorf("GET /session/%s via %s after retention = %d %s, want 410", id, via.srv.Replica(), code, body)
		}
	}
}

func TestParseRetention(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want web.Retention
	}{
		{"30d", web.Retention{MaxAge: 30 * 24 * time.Hour}},
		{"12h", web.Retention{MaxAge: 12 * time.Hour}},
		{"1.5d", web.Retention{MaxAge: 36 * time.Hour}},
		{"50GB", web.Retention{MaxBytes: 50e9}},
		{"500MiB", web.Retention{MaxBytes: 500 << 20}},
		{"30d, 2TiB", web.Retention{MaxAge: 30 * 24 * time.Hour, MaxBytes: 2 << 40}},
		{"100B,90m", web.Retention{MaxAge: 90 * time.Minute, MaxBytes: 100}},
	} {
		if got, err := web.ParseRetention(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseRetention(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", ",", "0", "0d", "-1d", "forever", "30d,12h", "1GB,2GB", "0B", "12 h"} {
		if got, err := web.ParseRetention(bad); err == nil {
			t.Errorf("ParseRetention(%q) = %+v, want an error", bad, got)
		}
	}
}
