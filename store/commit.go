package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit. Every write of a store goes through one queue, and one
// goroutine (the committer) runs what has gathered in it as a single
// transaction: each write in a savepoint of its own, so that one that
// fails takes nothing else with it, and one commit, so one sync to disk
// (SQLite's WAL fsync, PostgreSQL's WAL flush), for all of them. A write
// returns (or its done func is called) only once that commit is on disk,
// so every method stays durable when it returns; writes that arrive while
// a commit is running wait for the next one, which is what lets them share
// it. The queue is also one order: writes are stored in the order they
// were queued.

// maxGroup bounds the writes of one group transaction.
const maxGroup = 128

// groupTimeout bounds one group transaction, so that a database that hangs
// fails the writers instead of holding them forever.
const groupTimeout = 2 * time.Minute

// outageWait bounds how long writes wait for a database that cannot be
// reached (a restart, a failover) before they fail; a write that was
// sent when the connection broke, before its commit, had nothing stored
// and runs again. A commit that broke is not run again: whether it was
// stored is not known, and its writers get the error.
const outageWait = 30 * time.Second

// errClosed answers writes queued after Close.
var errClosed = errors.New("store: closed")

// A request is one write waiting in the queue.
type request struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *sql.Tx) error
	done func(error) // called once, on the committer, in queue order
	// state: 0 queued, 1 taken by the committer, 2 abandoned by its
	// writer (whose context ended first): not run.
	state atomic.Int32
}

// committer owns a store's queue of writes.
type committer struct {
	d       *db
	mu      sync.Mutex
	queue   []*request
	closed  bool
	wake    chan struct{} // a write was queued (capacity 1)
	stopped chan struct{} // closed when the committer's goroutine returned
	// retryable reports errors after which a group is rolled back and its
	// writes run again one transaction each (PostgreSQL's deadlocks:
	// writes of several sessions in one transaction lock several rows).
	retryable func(error) bool
	// groups and writes count the transactions run and the writes in
	// them, for tests.
	groups, writes atomic.Int64
}

func (d *db) startCommitter() {
	d.c = &committer{d: d, wake: make(chan struct{}, 1), stopped: make(chan struct{}), retryable: d.retryable}
	go d.c.run()
}

// enqueue queues fn; done is called with its outcome once it is durable
// or failed. It returns the request, or nil after Close (done is then
// called at once with errClosed).
func (c *committer) enqueue(ctx context.Context, fn func(context.Context, *sql.Tx) error, done func(error)) *request {
	r := &request{ctx: ctx, fn: fn, done: done}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		done(errClosed)
		return nil
	}
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return r
}

// run commits groups until Close, then what is still queued.
func (c *committer) run() {
	defer close(c.stopped)
	for {
		c.mu.Lock()
		n := min(len(c.queue), maxGroup)
		group := c.queue[:n:n]
		c.queue = c.queue[n:]
		closed := c.closed
		c.mu.Unlock()
		if n == 0 {
			if closed {
				return
			}
			<-c.wake
			continue
		}
		c.commit(group)
	}
}

// commit runs a group in one transaction and tells each writer its
// outcome.
func (c *committer) commit(group []*request) {
	live := group[:0:0]
	for _, r := range group {
		if !r.state.CompareAndSwap(0, 1) {
			continue // its writer gave up waiting
		}
		if err := r.ctx.Err(); err != nil {
			r.done(context.Cause(r.ctx))
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	c.groups.Add(1)
	c.writes.Add(int64(len(live)))
	t0 := time.Now()
	errs, retry, down := c.group(live)
	for wait, until := 50*time.Millisecond, time.Now().Add(outageWait); down && time.Now().Before(until) && !c.isClosed(); wait = min(2*wait, time.Second) {
		time.Sleep(wait) // the database is away: nothing to do but wait for it
		errs, retry, down = c.group(live)
	}
	if retry {
		// Nothing of the group was stored: each write runs alone, in
		// order, as if there had been no group.
		for i, r := range live {
			errs[i] = c.alone(r)
		}
	}
	outcome := "ok"
	if slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		outcome = "failed"
	}
	driver := c.d.driver()
	metricCommit.WithLabelValues(driver, outcome).Observe(time.Since(t0).Seconds())
	metricCommitWrites.WithLabelValues(driver).Observe(float64(len(live)))
	for i, r := range live {
		r.done(errs[i])
	}
}

// isClosed reports whether Close was called.
func (c *committer) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// group runs rs in one transaction, each in a savepoint when there are
// several. It returns each write's error (a failed commit is every one's),
// or retry when the group was rolled back for a retryable error, or down
// when the database could not be reached, the connection broke before the
// commit, or the server answered the commit that it is shutting down:
// nothing was stored, and the group can run again as it is.
func (c *committer) group(rs []*request) (errs []error, retry, down bool) {
	errs = make([]error, len(rs))
	lost := func(err error) bool { return c.d.disconnected != nil && c.d.disconnected(err) }
	rolledBack := func(err error) bool { return c.d.rolledBack != nil && c.d.rolledBack(err) }
	fail := func(err error) ([]error, bool, bool) {
		for i := range errs {
			errs[i] = err
		}
		return errs, false, lost(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	tx, err := c.d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	if len(rs) == 1 {
		if err := rs[0].fn(context.WithoutCancel(rs[0].ctx), tx); err != nil {
			tx.Rollback()
			if lost(err) {
				return fail(err)
			}
			errs[0] = err
			return errs, false, false
		}
		err = tx.Commit()
		if rolledBack(err) {
			return fail(err)
		}
		errs[0] = err
		return errs, false, false
	}
	for i, r := range rs {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			tx.Rollback()
			if lost(err) {
				return fail(err)
			}
			return errs, true, false
		}
		err := r.fn(context.WithoutCancel(r.ctx), tx)
		if lost(err) {
			tx.Rollback()
			return fail(err)
		}
		if err != nil && c.retryable != nil && c.retryable(err) {
			tx.Rollback()
			return errs, true, false
		}
		step := "RELEASE SAVEPOINT w"
		if err != nil {
			step = "ROLLBACK TO SAVEPOINT w"
		}
		if _, serr := tx.ExecContext(ctx, step); serr != nil {
			// The transaction is in a state no savepoint can mend:
			// nothing was committed, so each write runs alone.
			tx.Rollback()
			if lost(serr) {
				return fail(serr)
			}
			return errs, true, false
		}
		if err != nil {
			if _, serr := tx.ExecContext(ctx, "RELEASE SAVEPOINT w"); serr != nil {
				tx.Rollback()
				if lost(serr) {
					return fail(serr)
				}
				return errs, true, false
			}
		}
		errs[i] = err
	}
	err = tx.Commit()
	if rolledBack(err) {
		return fail(err)
	}
	if err != nil {
		err = fmt.Errorf("commit: %w", err)
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs, false, false
}

// alone runs one write in a transaction of its own.
func (c *committer) alone(r *request) error {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	tx, err := c.d.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := r.fn(context.WithoutCancel(r.ctx), tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// close stops taking writes, and returns once the queued ones are done.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.stopped
}

// write runs fn in a transaction and returns once it is committed (and on
// disk), or failed. fn may share its transaction with other writes (see
// committer); it gets a context that is not cancelled, since a statement
// cut short would take the other writes' work with it. A ctx that ends
// while fn waits in the queue takes it out; one that ends while it runs
// returns ctx's error at once, without knowing whether fn was stored.
func (d *db) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	ch := make(chan error, 1)
	r := d.c.enqueue(ctx, fn, func(err error) { ch <- err })
	if r == nil {
		return <-ch
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(0, 2) {
			return context.Cause(ctx) // never run
		}
		select {
		case err := <-ch: // it was done already
			return err
		default:
			return context.Cause(ctx)
		}
	}
}
