package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/store"
)

// Retention says which finished sessions (stopped, failed, or idle: see
// store.Finished) a server deletes, whole: their records in the store
// (events, messages, calls, approvals, the screenshot index; the audit log
// is kept) and their files (traces and screenshots). A deleted session's
// requests answer 410 Gone. One replica at a time applies it, under a
// lease in the store; every replica forgets the deleted sessions it held.
// The zero Retention deletes nothing.
type Retention struct {
	// MaxAge deletes a finished session once nothing has changed in it
	// for this long; 0: no age limit.
	MaxAge time.Duration
	// MaxBytes keeps the sessions' files under this many bytes, deleting
	// finished sessions oldest first (by their last change); 0: no size
	// limit. Running sessions count but are never deleted.
	MaxBytes int64
	// Every is how often retention runs; default DefaultRetentionEvery,
	// or a tenth of MaxAge when that is shorter (at least a second).
	Every time.Duration
}

// DefaultRetentionEvery is Retention.Every's default.
const DefaultRetentionEvery = 10 * time.Minute

// tombstoneKeep is how long a deleted session answers 410 before its
// tombstone goes too, and it answers 404 like any unknown id.
const tombstoneKeep = 90 * 24 * time.Hour

// retentionLease names the lease of the replica that applies retention.
const retentionLease = "retention"

// Enabled reports whether r deletes anything.
func (r Retention) Enabled() bool { return r.MaxAge > 0 || r.MaxBytes > 0 }

func (r Retention) every() time.Duration {
	if r.Every > 0 {
		return r.Every
	}
	e := DefaultRetentionEvery
	if r.MaxAge > 0 {
		e = min(e, r.MaxAge/10)
	}
	return max(e, time.Second)
}

// String is the flag's form of r: "30d,50GiB".
func (r Retention) String() string {
	var parts []string
	if r.MaxAge > 0 {
		parts = append(parts, r.MaxAge.String())
	}
	if r.MaxBytes > 0 {
		parts = append(parts, strconv.FormatInt(r.MaxBytes, 10)+"B")
	}
	return strings.Join(parts, ",")
}

// ParseRetention reads spotter serve's --retain: an age ("30d", "12h",
// "90m": Go durations, and d for days), a size ("50GB", "500MiB", "2TiB",
// "1000000B"), or both separated by a comma.
func ParseRetention(s string) (Retention, error) {
	var r Retention
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n, ok := parseBytes(part); ok {
			if r.MaxBytes > 0 || n <= 0 {
				return Retention{}, fmt.Errorf("--retain %q: one positive size at most", s)
			}
			r.MaxBytes = n
			continue
		}
		d, err := parseAge(part)
		if err != nil || d <= 0 || r.MaxAge > 0 {
			return Retention{}, fmt.Errorf("--retain %q: want an age (30d, 12h), a size (50GB, 500MiB) or both, comma-separated", s)
		}
		r.MaxAge = d
	}
	if !r.Enabled() {
		return Retention{}, fmt.Errorf("--retain %q: want an age (30d, 12h), a size (50GB, 500MiB) or both, comma-separated", s)
	}
	return r, nil
}

func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil {
			return 0, err
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	return time.ParseDuration(s)
}

// byteUnits are the sizes --retain takes, longest suffix first.
var byteUnits = []struct {
	suffix string
	n      float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

func parseBytes(s string) (int64, bool) {
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, false
			}
			return int64(n * u.n), true
		}
	}
	return 0, false
}

// retainer applies a server's Retention: on the replica that holds the
// lease, it deletes what the limits say; on every replica, it forgets the
// sessions deleted since its last round.
type retainer struct {
	s      *Server
	r      Retention
	log    *slog.Logger
	holder string
	dir    string // the sessions' directories

	mu     sync.Mutex
	sizes  map[string]sized // finished sessions' sizes, by id, while unchanged
	seen   time.Time        // the last tombstone forgotten
	passes int
}

type sized struct {
	updated time.Time
	bytes   int64
}

func newRetainer(s *Server, r Retention) *retainer {
	// The lease's holder is this process: a replica's id and incarnation,
	// or a server's host and process id.
	holder := ""
	if c := s.cluster; c != nil {
		holder = c.id + "/" + c.incarnation
	} else {
		host, _ := os.Hostname()
		holder = cmp.Or(host, "spotter") + "-" + strconv.Itoa(os.Getpid())
	}
	return &retainer{s: s, r: r, log: s.log.With("part", "retention"), holder: holder,
		dir: filepath.Join(s.cfg.DataDir, "sessions"), sizes: map[string]sized{}, seen: time.Now()}
}

// run applies retention every r.every() until ctx is done, and gives the
// lease up at the end.
func (rt *retainer) run(ctx context.Context) {
	t := time.NewTicker(rt.r.every())
	defer t.Stop()
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := rt.s.st.ReleaseLease(rctx, retentionLease, rt.holder); err != nil {
			rt.log.Warn("give the retention lease up", "err", err)
		}
	}()
	for {
		if _, err := rt.round(ctx, time.Now()); err != nil && ctx.Err() == nil {
			rt.log.Warn("retention", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// passResult says what one pass deleted.
type passResult struct {
	Held              bool // this replica held the lease and applied the limits
	Deleted           []string
	Bytes, Remaining  int64 // bytes deleted; bytes the sessions still hold
	Conflicts, Failed int   // sessions that changed meanwhile; deletions that failed
}

// round forgets the sessions other replicas deleted, then, if this
// replica holds (or takes) the lease, applies the limits at now.
func (rt *retainer) round(ctx context.Context, now time.Time) (passResult, error) {
	rt.forgetDeleted(ctx)
	if rt.s.draining.Load() || rt.s.closing.Load() {
		return passResult{}, nil
	}
	held, err := rt.s.st.AcquireLease(ctx, retentionLease, rt.holder, now, now.Add(2*rt.r.every()+time.Second))
	if err != nil || !held {
		return passResult{}, err
	}
	res, err := rt.pass(ctx, now)
	res.Held = true
	rt.mu.Lock()
	rt.passes++
	rt.mu.Unlock()
	return res, err
}

// forgetDeleted drops from memory the sessions deleted since the last
// round (by any replica).
func (rt *retainer) forgetDeleted(ctx context.Context) {
	rt.mu.Lock()
	since := rt.seen
	rt.mu.Unlock()
	ts, err := rt.s.st.DeletedSince(ctx, since.Add(-2*time.Second)) // clocks a little apart
	if err != nil {
		rt.log.Warn("list deleted sessions", "err", err)
		return
	}
	for _, t := range ts {
		if err := rt.s.mgr.Forget(ctx, t.Session); err != nil {
			rt.log.Warn("forget a deleted session", "session", t.Session, "err", err)
		}
		if t.Deleted.After(since) {
			since = t.Deleted
		}
	}
	rt.mu.Lock()
	rt.seen = since
	rt.mu.Unlock()
}

// candidate is a session retention may delete.
type candidate struct {
	rec   store.Session
	bytes int64
}

// pass applies the limits at now: finished sessions unchanged for MaxAge
// go, then the oldest finished ones while the sessions' files hold more
// than MaxBytes. It also removes the files a deletion interrupted left
// behind, and tombstones older than tombstoneKeep.
func (rt *retainer) pass(ctx context.Context, now time.Time) (passResult, error) {
	var res passResult
	recs, err := rt.s.st.Sessions(ctx)
	if err != nil {
		return res, err
	}
	known := make(map[string]bool, len(recs))
	var total int64
	var finished []candidate
	for _, rec := range recs {
		known[rec.ID] = true
		n := rt.size(rec)
		total += n
		if slices.Contains(store.Finished, rec.Status) {
			finished = append(finished, candidate{rec, n})
		}
	}
	slices.SortFunc(finished, func(a, b candidate) int {
		return cmp.Or(a.rec.Updated.Compare(b.rec.Updated), cmp.Compare(a.rec.ID, b.rec.ID))
	})
	for _, c := range finished {
		if ctx.Err() != nil {
			break
		}
		why := ""
		switch {
		case rt.r.MaxAge > 0 && now.Sub(c.rec.Updated) >= rt.r.MaxAge:
			why = "age"
		case rt.r.MaxBytes > 0 && total > rt.r.MaxBytes:
			why = "size"
		default:
			continue
		}
		switch err := rt.delete(ctx, c, why); {
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
			res.Conflicts++
		case err != nil:
			res.Failed++
			rt.log.Warn("delete a session", "session", c.rec.ID, "err", err)
		default:
			res.Deleted = append(res.Deleted, c.rec.ID)
			res.Bytes += c.bytes
			total -= c.bytes
		}
	}
	res.Remaining = total
	rt.leftovers(ctx, known)
	if n, err := rt.s.st.PruneDeleted(ctx, now.Add(-tombstoneKeep)); err != nil {
		rt.log.Warn("prune tombstones", "err", err)
	} else if n > 0 {
		rt.log.Info("pruned tombstones", "sessions", n)
	}
	if rt.r.MaxBytes > 0 && total > rt.r.MaxBytes {
		rt.log.Warn("the sessions that are not finished hold more than the retention's size", "bytes", total, "limit", rt.r.MaxBytes)
	}
	if len(res.Deleted) > 0 {
		rt.log.Info("retention deleted sessions", "sessions", len(res.Deleted), "bytes", res.Bytes, "remaining_bytes", total)
	}
	return res, nil
}

// delete deletes one session whole: its records in one transaction (only
// if it is still as chosen), then its files. It is audited.
func (rt *retainer) delete(ctx context.Context, c candidate, why string) error {
	if err := rt.s.st.DeleteSession(ctx, c.rec.ID, c.rec.Updated, store.Finished...); err != nil {
		return err
	}
	rt.mu.Lock()
	delete(rt.sizes, c.rec.ID)
	rt.mu.Unlock()
	// Held here (an idle session, say): let go of it at once.
	if err := rt.s.mgr.Forget(ctx, c.rec.ID); err != nil {
		rt.log.Warn("forget a deleted session", "session", c.rec.ID, "err", err)
	}
	if err := os.RemoveAll(filepath.Join(rt.dir, c.rec.ID)); err != nil {
		// Its records are gone: the next pass removes what is left.
		rt.log.Warn("remove a deleted session's files", "session", c.rec.ID, "err", err)
	}
	rt.s.mgr.Audit(ctx, "system", "retain", c.rec.ID, "", map[string]any{"deleted": why, "status": c.rec.Status,
		"updated": c.rec.Updated, "bytes": c.bytes})
	return nil
}

// leftovers removes the directories of deleted sessions whose files a
// deletion that was cut short left. Directories of no known session and
// no tombstone are left alone, and not counted.
func (rt *retainer) leftovers(ctx context.Context, known map[string]bool) {
	ents, err := os.ReadDir(rt.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || known[e.Name()] {
			continue
		}
		if _, err := rt.s.st.Deleted(ctx, e.Name()); err != nil {
			continue
		}
		if err := os.RemoveAll(filepath.Join(rt.dir, e.Name())); err != nil {
			rt.log.Warn("remove a deleted session's files", "session", e.Name(), "err", err)
		}
	}
}

// size returns how many bytes a session's files take, remembering it
// while a finished session is unchanged.
func (rt *retainer) size(rec store.Session) int64 {
	finished := slices.Contains(store.Finished, rec.Status)
	rt.mu.Lock()
	sz, ok := rt.sizes[rec.ID]
	rt.mu.Unlock()
	if finished && ok && sz.updated.Equal(rec.Updated) {
		return sz.bytes
	}
	n := dirBytes(filepath.Join(rt.dir, rec.ID))
	rt.mu.Lock()
	if finished {
		rt.sizes[rec.ID] = sized{rec.Updated, n}
	} else {
		delete(rt.sizes, rec.ID)
	}
	rt.mu.Unlock()
	return n
}

// dirBytes adds up the sizes of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}
