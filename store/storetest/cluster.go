package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/store"
)

// replica is a replica row renewed at renewed with a lease of ttl.
func replica(id string, renewed time.Time, ttl time.Duration) store.Replica {
	return store.Replica{ID: id, Addr: "http://" + id + ":8080", Sessions: 2, Capacity: 10,
		Started: at(0), Renewed: renewed, Expires: renewed.Add(ttl)}
}

func storedReplica(r store.Replica) store.Replica {
	r.Started, r.Renewed, r.Expires = stored(r.Started), stored(r.Renewed), stored(r.Expires)
	return r
}

func testReplicas(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping() = %v", err)
	}
	if got, err := s.Replicas(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Replicas() of a new store = %v, %v, want none", got, err)
	}
	b := replica("b", at(0), 15*time.Second)
	b.Draining = true
	a := replica("a", at(0), 15*time.Second)
	for _, r := range []store.Replica{b, a} {
		if lapsed, err := s.Heartbeat(ctx, r); err != nil || lapsed {
			t.Fatalf("Heartbeat(%s) first = %v, %v, want not lapsed", r.ID, lapsed, err)
		}
	}
	got, err := s.Replicas(ctx)
	if err != nil {
		t.Fatalf("Replicas() = %v", err)
	}
	if diff := cmp.Diff([]store.Replica{storedReplica(a), storedReplica(b)}, got); diff != "" {
		t.Errorf("Replicas() (-want +got):\n%s", diff)
	}
	for _, r := range got {
		checkUTC(t, "Replicas", r.Started, r.Renewed, r.Expires)
	}
	// Renewed within its lease: not lapsed; the row takes the new values.
	a = replica("a", at(10*time.Second), 15*time.Second)
	a.Sessions = 5
	if lapsed, err := s.Heartbeat(ctx, a); err != nil || lapsed {
		t.Errorf("Heartbeat(a) within the lease = %v, %v, want not lapsed", lapsed, err)
	}
	// Renewed after the lease ran out (at 25s): lapsed.
	a = replica("a", at(25*time.Second), 15*time.Second)
	if lapsed, err := s.Heartbeat(ctx, a); err != nil || !lapsed {
		t.Errorf("Heartbeat(a) at the lease's end = %v, %v, want lapsed", lapsed, err)
	}
	got, _ = s.Replicas(ctx)
	if len(got) != 2 || got[0].Sessions != 2 || !got[0].Expires.Equal(stored(at(40*time.Second))) || got[0].Draining || !got[1].Draining {
		t.Errorf("Replicas() after renewals = %+v, want a's row renewed to 40s, b draining", got)
	}
	if !got[0].Live(at(39*time.Second)) || got[0].Live(at(40*time.Second)) {
		t.Errorf("Replica.Live: want live before its expiry only")
	}

	for _, bad := range []store.Replica{{Renewed: at(0), Expires: at(time.Second)}, {ID: "x", Renewed: at(time.Second), Expires: at(time.Second)}} {
		if _, err := s.Heartbeat(ctx, bad); err == nil {
			t.Errorf("Heartbeat(%+v) = nil error, want one", bad)
		}
	}
	if err := s.DeleteReplica(ctx, "b"); err != nil {
		t.Errorf("DeleteReplica(b) = %v", err)
	}
	if err := s.DeleteReplica(ctx, "never"); err != nil {
		t.Errorf("DeleteReplica(never) = %v, want nil", err)
	}
	if got, _ := s.Replicas(ctx); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("Replicas() after DeleteReplica(b) = %+v, want a only", got)
	}
}

// orphanIDs lists the session ids of Orphans at now.
func orphanIDs(t *testing.T, s store.Store, now time.Time) []string {
	t.Helper()
	os, err := s.Orphans(t.Context(), now)
	if err != nil {
		t.Fatalf("Orphans(%v) = %v", now, err)
	}
	ids := []string{}
	for _, o := range os {
		ids = append(ids, o.Session)
	}
	return ids
}

// testOwnership follows sessions' ownership through its life on one store:
// created owned by two replicas, orphaned when a lease runs out, claimed
// by epoch, released by a drain, and left ownerless when a replica's row
// is deleted.
func testOwnership(t *testing.T, dsn string) {
	s := open(t, dsn)
	ttl := 15 * time.Second
	createOwned(t, s, ttl)
	checkOwners(t, s, ttl)
	checkLeaseOrphans(t, s, ttl)
	checkClaims(t, s)
	checkRelease(t, s)
}

// createOwned heartbeats replicas r1 and r2 with leases of ttl, then
// creates session "old" owned by nobody (from a server without replicas),
// "a" owned by r1 and "b" by r2; creating a session twice, or without an
// owner, must fail.
func createOwned(t *testing.T, s store.Store, ttl time.Duration) {
	ctx := t.Context()
	if _, err := s.Heartbeat(ctx, replica("r1", at(0), ttl)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Heartbeat(ctx, replica("r2", at(0), ttl)); err != nil {
		t.Fatal(err)
	}
	// "old" comes from a server without replicas: nobody owns it.
	if err := s.CreateSession(ctx, newSession("old", at(0))); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateOwnedSession(ctx, newSession("a", at(time.Minute)), "r1"); err != nil {
		t.Fatalf("CreateOwnedSession(a, r1) = %v", err)
	}
	if err := s.CreateOwnedSession(ctx, newSession("b", at(2*time.Minute)), "r2"); err != nil {
		t.Fatalf("CreateOwnedSession(b, r2) = %v", err)
	}
	if got, err := s.Session(ctx, "a"); err != nil || got.Title != "title of a" {
		t.Errorf("Session(a) = %+v, %v, want it stored", got, err)
	}
	if err := s.CreateOwnedSession(ctx, newSession("a", at(0)), "r2"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateOwnedSession(a again) = %v, want ErrConflict", err)
	}
	if err := s.CreateOwnedSession(ctx, newSession("c", at(0)), ""); err == nil {
		t.Errorf("CreateOwnedSession(c, no owner) = nil error, want one")
	}
	if _, err := s.Session(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session(c) after a refused create = %v, want ErrNotFound", err)
	}
}

// checkOwners checks the owners createOwned left: r1 owns "a" at epoch 1
// while its lease of ttl runs, nobody owns "old", and "nope" does not
// exist.
func checkOwners(t *testing.T, s store.Store, ttl time.Duration) {
	ctx := t.Context()
	o, err := s.Owner(ctx, "a")
	if err != nil {
		t.Fatalf("Owner(a) = %v", err)
	}
	want := store.Owner{Session: "a", Replica: "r1", Epoch: 1, Since: o.Since, Addr: "http://r1:8080", Expires: stored(at(ttl))}
	if diff := cmp.Diff(want, o); diff != "" || o.Since.IsZero() {
		t.Errorf("Owner(a) (-want +got):\n%s", diff)
	}
	if !o.Live(at(time.Second)) || o.Live(at(ttl)) {
		t.Errorf("Owner(a).Live: want live while r1's lease runs only")
	}
	if o, err := s.Owner(ctx, "old"); err != nil || o.Replica != "" || o.Epoch != 0 || o.Live(at(0)) {
		t.Errorf("Owner(old) = %+v, %v, want nobody at epoch 0", o, err)
	}
	if _, err := s.Owner(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Owner(nope) = %v, want ErrNotFound", err)
	}
}

// checkLeaseOrphans checks that while both leases run only the unowned
// session is an orphan, and that once r1's lease has run out (r2 renewed
// for ttl at 10s, r1 did not) r1's session is one too.
func checkLeaseOrphans(t *testing.T, s store.Store, ttl time.Duration) {
	// While both leases run, only the unowned session is an orphan.
	if diff := cmp.Diff([]string{"old"}, orphanIDs(t, s, at(time.Second))); diff != "" {
		t.Errorf("Orphans while every lease runs (-want +got):\n%s", diff)
	}
	// r2 renews, r1 does not: at 20s r1's sessions are orphans too.
	if _, err := s.Heartbeat(t.Context(), replica("r2", at(10*time.Second), ttl)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"old", "a"}, orphanIDs(t, s, at(20*time.Second))); diff != "" {
		t.Errorf("Orphans after r1's lease ran out (-want +got):\n%s", diff)
	}
}

// checkClaims has r2 adopt the orphans: a claim at the session's epoch
// wins once and bumps the epoch, a stale claim loses with ErrConflict, a
// missing session is ErrNotFound and a claim needs a replica. No orphans
// are left.
func checkClaims(t *testing.T, s store.Store) {
	ctx := t.Context()
	// r2 adopts a: the claim at a's epoch wins once.
	o, err := s.ClaimSession(ctx, "a", "r2", 1, at(20*time.Second))
	if err != nil || o.Replica != "r2" || o.Epoch != 2 || !o.Since.Equal(stored(at(20*time.Second))) || o.Addr != "http://r2:8080" {
		t.Errorf("ClaimSession(a, r2, epoch 1) = %+v, %v, want r2's at epoch 2", o, err)
	}
	o, err = s.ClaimSession(ctx, "a", "r1", 1, at(21*time.Second))
	if !errors.Is(err, store.ErrConflict) || o.Replica != "r2" || o.Epoch != 2 {
		t.Errorf("ClaimSession(a, r1, stale epoch 1) = %+v, %v, want ErrConflict and r2's ownership", o, err)
	}
	// A session never owned is claimed at epoch 0, once.
	if o, err := s.ClaimSession(ctx, "old", "r2", 0, time.Time{}); err != nil || o.Replica != "r2" || o.Epoch != 1 {
		t.Errorf("ClaimSession(old, r2, 0) = %+v, %v, want r2's at epoch 1", o, err)
	}
	if o, err := s.ClaimSession(ctx, "old", "r1", 0, time.Time{}); !errors.Is(err, store.ErrConflict) || o.Replica != "r2" {
		t.Errorf("ClaimSession(old, r1, 0) again = %+v, %v, want ErrConflict and r2's ownership", o, err)
	}
	for _, epoch := range []int64{0, 1} {
		if _, err := s.ClaimSession(ctx, "nope", "r2", epoch, time.Time{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ClaimSession(nope, epoch %d) = %v, want ErrNotFound", epoch, err)
		}
	}
	if _, err := s.ClaimSession(ctx, "b", "", 1, time.Time{}); err == nil {
		t.Errorf("ClaimSession(b, no replica) = nil error, want one")
	}
	if diff := cmp.Diff([]string{}, orphanIDs(t, s, at(20*time.Second))); diff != "" {
		t.Errorf("Orphans after the claims (-want +got):\n%s", diff)
	}
}

// checkRelease has r2 drain: its three sessions are released, orphans at
// once, and claimable at their epoch. Then r1's row is deleted: r1 owns
// nothing live, and its sessions are orphans.
func checkRelease(t *testing.T, s store.Store) {
	ctx := t.Context()
	// r2 drains: it releases its sessions, which are orphans at once.
	if n, err := s.ReleaseSessions(ctx, "r2"); err != nil || n != 3 {
		t.Errorf("ReleaseSessions(r2) = %d, %v, want 3", n, err)
	}
	if _, err := s.ReleaseSessions(ctx, ""); err == nil {
		t.Errorf("ReleaseSessions(\"\") = nil error, want one")
	}
	if diff := cmp.Diff([]string{"old", "a", "b"}, orphanIDs(t, s, at(11*time.Second))); diff != "" {
		t.Errorf("Orphans after r2 released its sessions (-want +got):\n%s", diff)
	}
	o, err := s.Owner(ctx, "b")
	if err != nil || o.Replica != "" || o.Epoch != 2 {
		t.Errorf("Owner(b) after release = %+v, %v, want nobody at epoch 2", o, err)
	}
	if o, err := s.ClaimSession(ctx, "b", "r1", 2, time.Time{}); err != nil || o.Replica != "r1" || o.Epoch != 3 {
		t.Errorf("ClaimSession(b, r1, 2) after release = %+v, %v, want r1's at epoch 3", o, err)
	}
	// A replica whose row is gone owns nothing live.
	if err := s.DeleteReplica(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Owner(ctx, "b"); err != nil || o.Replica != "r1" || o.Addr != "" || o.Live(at(0)) {
		t.Errorf("Owner(b) after r1's row was deleted = %+v, %v, want r1 without address or lease", o, err)
	}
	if diff := cmp.Diff([]string{"old", "a", "b"}, orphanIDs(t, s, at(0))); diff != "" {
		t.Errorf("Orphans after r1's row was deleted (-want +got):\n%s", diff)
	}
}

// testClaimRace has replicas on two stores claim the same orphans at once:
// each session gets exactly one owner, and every loser sees it.
func testClaimRace(t *testing.T, dsn string) {
	ctx := t.Context()
	stores := []store.Store{open(t, dsn), open(t, dsn)}
	const sessions, claimers = 4, 6
	for i := range sessions {
		if err := stores[0].CreateOwnedSession(ctx, newSession(fmt.Sprintf("s%d", i), at(time.Duration(i))), "dead"); err != nil {
			t.Fatal(err)
		}
	}
	orphans, err := stores[1].Orphans(ctx, at(0))
	if err != nil || len(orphans) != sessions {
		t.Fatalf("Orphans() = %v, %v, want %d sessions of a replica without a row", orphans, err, sessions)
	}
	for _, o := range orphans {
		var mu sync.Mutex
		var winners []string
		owners := map[string]bool{}
		var wg sync.WaitGroup
		for i := range claimers {
			wg.Go(func() {
				me := fmt.Sprintf("r%d", i)
				got, err := stores[i%2].ClaimSession(ctx, o.Session, me, o.Epoch, time.Time{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, me)
				case !errors.Is(err, store.ErrConflict):
					t.Errorf("ClaimSession(%s) by %s = %v, want nil or ErrConflict", o.Session, me, err)
				}
				owners[got.Replica] = true
			})
		}
		wg.Wait()
		if len(winners) != 1 || len(owners) != 1 || !owners[winners[0]] {
			t.Errorf("ClaimSession(%s) from %d replicas: winners %v, owners seen %v, want one winner seen by all", o.Session, claimers, winners, owners)
		}
	}
}

// testReplicaIncarnation checks that one process at a time holds a
// replica id: another incarnation is refused while the lease runs,
// without touching the row, and takes the id once it lapsed.
func testReplicaIncarnation(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	first := replica("r", at(0), 15*time.Second)
	first.Incarnation = "one"
	if _, err := s.Heartbeat(ctx, first); err != nil {
		t.Fatalf("Heartbeat(first) = %v", err)
	}
	second := replica("r", at(5*time.Second), 15*time.Second)
	second.Incarnation, second.Addr = "two", "http://elsewhere:8080"
	_, err := s.Heartbeat(ctx, second)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), first.Addr) {
		t.Errorf("Heartbeat(another incarnation within the lease) = %v, want ErrConflict naming the holder's address", err)
	}
	if got, _ := s.Replicas(ctx); len(got) != 1 || got[0].Incarnation != "one" || got[0].Addr != first.Addr {
		t.Errorf("Replicas() after a refused heartbeat = %+v, want the first's row untouched", got)
	}
	first.Renewed, first.Expires = at(10*time.Second), at(25*time.Second)
	if lapsed, err := s.Heartbeat(ctx, first); err != nil || lapsed {
		t.Errorf("Heartbeat(first, renewing) = %v, %v", lapsed, err)
	}
	second = replica("r", at(25*time.Second), 15*time.Second)
	second.Incarnation = "two"
	if lapsed, err := s.Heartbeat(ctx, second); err != nil || !lapsed {
		t.Errorf("Heartbeat(another incarnation once the lease lapsed) = %v, %v, want it taken, lapsed", lapsed, err)
	}
	first.Renewed, first.Expires = at(26*time.Second), at(41*time.Second)
	if _, err := s.Heartbeat(ctx, first); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Heartbeat(the first again, its id taken) = %v, want ErrConflict", err)
	}
}

// testConnOwner follows an MCP connection's sessions: their Conn is
// stored and kept across updates, ConnOwner names the owner of the
// connection's newest session, and orphans carry their Conn.
func testConnOwner(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	ttl := 15 * time.Second
	for _, r := range []string{"r1", "r2"} {
		if _, err := s.Heartbeat(ctx, replica(r, at(0), ttl)); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"m1", "m2", "x"} {
		sess, owner := newSession(id, at(time.Duration(i)*time.Minute)), "r1"
		if id == "x" {
			owner = "r2"
		} else {
			sess.Kind, sess.Conn = "mcp", "r1.c1"
		}
		if err := s.CreateOwnedSession(ctx, sess, owner); err != nil {
			t.Fatalf("CreateOwnedSession(%s) = %v", id, err)
		}
	}
	got, err := s.Session(ctx, "m1")
	if err != nil || got.Conn != "r1.c1" {
		t.Fatalf("Session(m1) = %+v, %v, want its connection r1.c1", got, err)
	}
	got.Status, got.Conn = store.StatusStopped, "other" // a session never changes connection
	if err := s.UpdateSession(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Session(ctx, "m1"); got.Conn != "r1.c1" || got.Status != store.StatusStopped {
		t.Errorf("Session(m1) after an update = %+v, want it stopped and still of r1.c1", got)
	}
	o, err := s.ConnOwner(ctx, "r1.c1")
	if err != nil || o.Session != "m2" || o.Replica != "r1" || o.Conn != "r1.c1" || o.Addr != "http://r1:8080" {
		t.Errorf("ConnOwner(r1.c1) = %+v, %v, want r1's, of its newest session m2", o, err)
	}
	for _, conn := range []string{"r1.none", ""} {
		if _, err := s.ConnOwner(ctx, conn); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ConnOwner(%q) = %v, want ErrNotFound", conn, err)
		}
	}
	// r1's lease runs out: its sessions are orphans with their connection.
	if _, err := s.Heartbeat(ctx, replica("r2", at(10*time.Second), ttl)); err != nil {
		t.Fatal(err)
	}
	orphans, err := s.Orphans(ctx, at(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var conns []string
	for _, o := range orphans {
		conns = append(conns, o.Session+":"+o.Conn)
	}
	if diff := cmp.Diff([]string{"m1:r1.c1", "m2:r1.c1"}, conns); diff != "" {
		t.Errorf("Orphans with their connections (-want +got):\n%s", diff)
	}
	for _, o := range orphans {
		if _, err := s.ClaimSession(ctx, o.Session, "r2", o.Epoch, at(20*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if o, err := s.ConnOwner(ctx, "r1.c1"); err != nil || o.Replica != "r2" || o.Epoch != 2 {
		t.Errorf("ConnOwner(r1.c1) after r2 adopted it = %+v, %v, want r2's at epoch 2", o, err)
	}
}
