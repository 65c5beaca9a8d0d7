package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Retention: a server deletes the sessions it no longer needs (web's
// --retain) whole, in one transaction each, leaving a tombstone so that
// their requests answer 410 Gone; and one replica at a time does it, under
// a lease (AcquireLease).

// sessionTables are the tables that hold a session's records, children
// first; the audit log is kept.
var sessionTables = []string{"events", "messages", "tool_calls", "approvals", "shots", "session_owners"}

// DeleteSession deletes a session whole, if its status is one of statuses
// and it was not updated since updated.
func (d *db) DeleteSession(ctx context.Context, id string, updated time.Time, statuses ...string) error {
	if id == "" {
		return errors.New("delete session: empty id")
	}
	if len(statuses) == 0 {
		return fmt.Errorf("delete session %s: no status to delete it in", id)
	}
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Lock the row (a replica appending to the session waits, as it
		// bumps the same row) and check it is still as chosen.
		args := []any{id, micros(updated)}
		for _, s := range statuses {
			args = append(args, s)
		}
		res, err := tx.ExecContext(ctx, d.q(`UPDATE sessions SET event_seq = event_seq WHERE id = ? AND updated_us = ? AND status IN (?`+
			strings.Repeat(", ?", len(statuses)-1)+`)`), args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var one int
			err := tx.QueryRowContext(ctx, d.q(`SELECT 1 FROM sessions WHERE id = ?`), id).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNotFound
			} else if err != nil {
				return err
			}
			return ErrConflict
		}
		for _, t := range sessionTables {
			if _, err := tx.ExecContext(ctx, d.q(`DELETE FROM `+t+` WHERE session = ?`), id); err != nil {
				return fmt.Errorf("%s: %w", t, err)
			}
		}
		if _, err := tx.ExecContext(ctx, d.q(`DELETE FROM sessions WHERE id = ?`), id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, d.q(`INSERT INTO deleted_sessions (id, deleted_us) VALUES (?, ?)
ON CONFLICT (id) DO UPDATE SET deleted_us = excluded.deleted_us`), id, micros(now()))
		return err
	})
	switch {
	case errors.Is(err, ErrConflict):
		return fmt.Errorf("delete session %s: it changed since %v: %w", id, updated.Format(time.RFC3339Nano), err)
	case err != nil:
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	return nil
}

// Deleted returns when a session was deleted.
func (d *db) Deleted(ctx context.Context, id string) (time.Time, error) {
	var us int64
	err := d.sql.QueryRowContext(ctx, d.q(`SELECT deleted_us FROM deleted_sessions WHERE id = ?`), id).Scan(&us)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, fmt.Errorf("deleted session %s: %w", id, ErrNotFound)
	case err != nil:
		return time.Time{}, fmt.Errorf("deleted session %s: %w", id, err)
	}
	return fromMicros(us), nil
}

// DeletedSince lists the sessions deleted after t, oldest first.
func (d *db) DeletedSince(ctx context.Context, t time.Time) ([]Tombstone, error) {
	out, err := query(ctx, d, func(sc scanner) (Tombstone, error) {
		var ts Tombstone
		var us int64
		err := sc.Scan(&ts.Session, &us)
		ts.Deleted = fromMicros(us)
		return ts, err
	}, `SELECT id, deleted_us FROM deleted_sessions WHERE deleted_us > ? ORDER BY deleted_us, id`, micros(t))
	if err != nil {
		return nil, fmt.Errorf("list deleted sessions: %w", err)
	}
	return out, nil
}

// PruneDeleted removes the tombstones older than before.
func (d *db) PruneDeleted(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, d.q(`DELETE FROM deleted_sessions WHERE deleted_us < ?`), micros(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune deleted sessions: %w", err)
	}
	return int(n), nil
}

// AcquireLease takes or renews a lease.
func (d *db) AcquireLease(ctx context.Context, name, holder string, now, expires time.Time) (bool, error) {
	switch {
	case name == "" || holder == "":
		return false, errors.New("acquire lease: empty name or holder")
	case !now.Before(expires):
		return false, fmt.Errorf("acquire lease %s: it ends (%v) before it starts (%v)", name, expires, now)
	}
	var n int64
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, d.q(`INSERT INTO leases (name, holder, expires_us) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_us = excluded.expires_us
WHERE leases.holder = excluded.holder OR leases.expires_us <= ?`), name, holder, micros(expires), micros(now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return n > 0, nil
}

// ReleaseLease gives up holder's lease name.
func (d *db) ReleaseLease(ctx context.Context, name, holder string) error {
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, d.q(`DELETE FROM leases WHERE name = ? AND holder = ?`), name, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}
