package store

import (
	"context"
	"database/sql"
	"errors"
)

// An op is one write, checked when it was made: it runs in tx and returns
// what to set in its argument (a Seq, a Time) once the transaction is
// committed, or nil.
type op func(ctx context.Context, d *db, tx *sql.Tx) (after func(), err error)

// run stores one op in a transaction (shared with other writes: see
// committer) and returns once it is durable.
func (d *db) run(ctx context.Context, o op, err error) error {
	if err != nil {
		return err
	}
	var after func()
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		after, err = o(ctx, d, tx)
		return err
	})
	if err == nil && after != nil {
		after()
	}
	return err
}

// A Batch is writes that are stored together: Store.Write and
// Store.WriteAsync run them in order in one transaction, so that all of
// them are stored or none, with one sync to disk. The Append methods set
// their argument's Seq (and Time) once the batch is stored, as Store's do.
// A write that is invalid as it is added (JSON that is not, an empty id)
// fails the whole batch. The zero Batch is empty and ready to use; a Batch
// is not safe for concurrent use, and is not to be changed once handed to
// Write or WriteAsync.
type Batch struct {
	ops    []op
	err    error    // the writes that were invalid as they were added
	events []*Event // the events it appends
}

func (b *Batch) add(o op, err error) {
	if err != nil {
		b.err = errors.Join(b.err, err)
		return
	}
	b.ops = append(b.ops, o)
}

// Len returns how many writes b holds.
func (b *Batch) Len() int { return len(b.ops) }

// AppendEvent adds Store.AppendEvent(e); e.Seq and e.Time are set once b
// is stored.
func (b *Batch) AppendEvent(e *Event) {
	b.add(appendEventOp(e))
	if e != nil {
		b.events = append(b.events, e)
	}
}

// Events returns the events b appends, in order: their Seq is set once b
// is stored. (For a Store that wraps another and looks at events.)
func (b *Batch) Events() []*Event { return b.events }

// AppendMessage adds Store.AppendMessage(m); m.Seq and m.Time are set once
// b is stored.
func (b *Batch) AppendMessage(m *Message) { b.add(appendMessageOp(m)) }

// PutToolCall adds Store.PutToolCall(c).
func (b *Batch) PutToolCall(c ToolCall) { b.add(putToolCallOp(c)) }

// UpdateSession adds Store.UpdateSession(s).
func (b *Batch) UpdateSession(s Session) { b.add(updateSessionOp(s)) }

// PutShot adds Store.PutShot(s).
func (b *Batch) PutShot(s Shot) { b.add(putShotOp(s)) }

// txOf is b as one write of the committer, and what to do once it is
// committed.
func (d *db) txOf(b *Batch) (fn func(context.Context, *sql.Tx) error, after func()) {
	var afters []func()
	fn = func(ctx context.Context, tx *sql.Tx) error {
		afters = afters[:0]
		for _, o := range b.ops {
			a, err := o(ctx, d, tx)
			if err != nil {
				return err
			}
			if a != nil {
				afters = append(afters, a)
			}
		}
		return nil
	}
	after = func() {
		for _, a := range afters {
			a()
		}
	}
	return fn, after
}

// Write stores b's writes in one transaction, in order, and returns once
// they are durable; on an error none is stored. An empty batch stores
// nothing.
func (d *db) Write(ctx context.Context, b *Batch) error {
	if b.err != nil {
		return b.err
	}
	if len(b.ops) == 0 {
		return nil
	}
	fn, after := d.txOf(b)
	if err := d.write(ctx, fn); err != nil {
		return err
	}
	after()
	return nil
}

// WriteAsync queues b and returns at once; done is called with Write's
// outcome once b is durable or failed. Calls of done come in the order the
// writes of this Store were queued (WriteAsync's and every other method's
// alike), on a goroutine of the store that runs the next commit only after
// done returns: done must be quick, and must not call the store. A nil done
// is allowed.
func (d *db) WriteAsync(b *Batch, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	if b.err != nil {
		done(b.err)
		return
	}
	fn, after := d.txOf(b)
	d.c.enqueue(context.Background(), fn, func(err error) {
		if err == nil {
			after()
		}
		done(err)
	})
}
