package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Replicas and session ownership: several `spotter serve` processes share
// one database, each session is owned by the replica that runs its
// browser, and a replica whose lease (its row's expires_us, renewed by
// Heartbeat) runs out loses its sessions to the others (Orphans,
// ClaimSession). Times come from the replicas' clocks, which must agree to
// well within a lease.

// Ping checks that the database answers.
func (d *db) Ping(ctx context.Context) error {
	if err := d.sql.PingContext(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	var one int
	if err := d.sql.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Heartbeat inserts or renews a replica's row. lapsed reports that the row
// existed and its lease had run out before r.Renewed.
func (d *db) Heartbeat(ctx context.Context, r Replica) (bool, error) {
	switch {
	case r.ID == "":
		return false, errors.New("heartbeat: empty replica id")
	case !r.Renewed.Before(r.Expires):
		return false, fmt.Errorf("heartbeat of replica %s: the lease ends (%v) before it is renewed (%v)", r.ID, r.Expires, r.Renewed)
	}
	lapsed := false
	var held Replica
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		cur, err := scanReplica(tx.QueryRowContext(ctx, d.q(`SELECT `+replicaCols+` FROM replicas WHERE id = ?`), r.ID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case cur.Incarnation != r.Incarnation && cur.Live(r.Renewed):
			held = cur
			return ErrConflict
		default:
			lapsed = micros(cur.Expires) <= micros(r.Renewed)
		}
		_, err = tx.ExecContext(ctx, d.q(`INSERT INTO replicas (id, addr, sessions, capacity, draining, started_us, renewed_us, expires_us, incarnation)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, sessions = excluded.sessions, capacity = excluded.capacity,
draining = excluded.draining, started_us = excluded.started_us, renewed_us = excluded.renewed_us, expires_us = excluded.expires_us,
incarnation = excluded.incarnation`),
			r.ID, r.Addr, r.Sessions, r.Capacity, boolInt(r.Draining), micros(r.Started), micros(r.Renewed), micros(r.Expires), r.Incarnation)
		return err
	})
	switch {
	case errors.Is(err, ErrConflict):
		return false, fmt.Errorf("heartbeat of replica %s: another process holds this replica id (at %s, lease renewed at %s, until %s): %w",
			r.ID, held.Addr, held.Renewed.Format(time.RFC3339Nano), held.Expires.Format(time.RFC3339Nano), err)
	case err != nil:
		return false, fmt.Errorf("heartbeat of replica %s: %w", r.ID, err)
	}
	return lapsed, nil
}

// replicaCols are the columns scanReplica reads.
const replicaCols = `id, addr, sessions, capacity, draining, started_us, renewed_us, expires_us, incarnation`

func scanReplica(sc scanner) (Replica, error) {
	var r Replica
	var draining, started, renewed, expires int64
	err := sc.Scan(&r.ID, &r.Addr, &r.Sessions, &r.Capacity, &draining, &started, &renewed, &expires, &r.Incarnation)
	r.Draining = draining != 0
	r.Started, r.Renewed, r.Expires = fromMicros(started), fromMicros(renewed), fromMicros(expires)
	return r, err
}

// Replicas lists every replica's row, by id.
func (d *db) Replicas(ctx context.Context) ([]Replica, error) {
	rs, err := query(ctx, d, scanReplica,
		`SELECT `+replicaCols+` FROM replicas ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	return rs, nil
}

// DeleteReplica removes a replica's row.
func (d *db) DeleteReplica(ctx context.Context, id string) error {
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, d.q(`DELETE FROM replicas WHERE id = ?`), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete replica %s: %w", id, err)
	}
	return nil
}

// CreateOwnedSession inserts s with replica as its owner, in one
// transaction: no other replica ever sees it without an owner.
func (d *db) CreateOwnedSession(ctx context.Context, s Session, replica string) error {
	switch {
	case s.ID == "":
		return errors.New("create session: empty id")
	case replica == "":
		return fmt.Errorf("create session %s: empty owner", s.ID)
	}
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := d.insertSession(ctx, tx, s); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, d.q(`INSERT INTO session_owners (session, owner, epoch, since_us) VALUES (?, ?, 1, ?)`),
			s.ID, replica, micros(now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("create session %s: %w", s.ID, err)
	}
	return nil
}

// ownerQuery reads sessions with their owner and the owner's lease.
const ownerQuery = `SELECT s.id, COALESCE(o.owner, ''), COALESCE(o.epoch, 0), COALESCE(o.since_us, 0),
COALESCE(r.addr, ''), COALESCE(r.expires_us, 0), s.conn
FROM sessions s LEFT JOIN session_owners o ON o.session = s.id LEFT JOIN replicas r ON r.id = o.owner`

func scanOwner(sc scanner) (Owner, error) {
	var o Owner
	var since, expires int64
	err := sc.Scan(&o.Session, &o.Replica, &o.Epoch, &since, &o.Addr, &expires, &o.Conn)
	if since != 0 {
		o.Since = fromMicros(since)
	}
	if expires != 0 {
		o.Expires = fromMicros(expires)
	}
	return o, err
}

// Owner says who owns a session.
func (d *db) Owner(ctx context.Context, session string) (Owner, error) {
	o, err := scanOwner(d.sql.QueryRowContext(ctx, d.q(ownerQuery+` WHERE s.id = ?`), session))
	if errors.Is(err, sql.ErrNoRows) {
		return Owner{}, fmt.Errorf("owner of session %s: %w", session, ErrNotFound)
	} else if err != nil {
		return Owner{}, fmt.Errorf("owner of session %s: %w", session, err)
	}
	return o, nil
}

// ConnOwner says who owns the newest session of an MCP connection.
func (d *db) ConnOwner(ctx context.Context, conn string) (Owner, error) {
	if conn == "" {
		return Owner{}, fmt.Errorf("owner of MCP connection: empty id: %w", ErrNotFound)
	}
	o, err := scanOwner(d.sql.QueryRowContext(ctx, d.q(ownerQuery+` WHERE s.conn = ? AND s.conn <> '' ORDER BY s.created_us DESC, s.id DESC LIMIT 1`), conn))
	if errors.Is(err, sql.ErrNoRows) {
		return Owner{}, fmt.Errorf("owner of MCP connection %s: %w", conn, ErrNotFound)
	} else if err != nil {
		return Owner{}, fmt.Errorf("owner of MCP connection %s: %w", conn, err)
	}
	return o, nil
}

// Orphans lists the sessions nobody live owns at now, oldest first.
func (d *db) Orphans(ctx context.Context, now time.Time) ([]Owner, error) {
	out, err := query(ctx, d, scanOwner, ownerQuery+` WHERE r.id IS NULL OR r.expires_us <= ? ORDER BY s.created_us, s.id`, micros(now))
	if err != nil {
		return nil, fmt.Errorf("list orphaned sessions: %w", err)
	}
	return out, nil
}

// ClaimSession makes replica the owner of a session still at epoch.
func (d *db) ClaimSession(ctx context.Context, session, replica string, epoch int64, at time.Time) (Owner, error) {
	if replica == "" {
		return Owner{}, fmt.Errorf("claim session %s: empty replica id", session)
	}
	if at.IsZero() {
		at = now()
	}
	var o Owner
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var n int64
		if epoch == 0 {
			res, err := tx.ExecContext(ctx, d.q(`INSERT INTO session_owners (session, owner, epoch, since_us) VALUES (?, ?, 1, ?)
ON CONFLICT (session) DO NOTHING`), session, replica, micros(at))
			if d.fkViolation(err) {
				return ErrNotFound
			} else if err != nil {
				return err
			}
			if n, err = res.RowsAffected(); err != nil {
				return err
			}
		} else {
			res, err := tx.ExecContext(ctx, d.q(`UPDATE session_owners SET owner = ?, epoch = epoch + 1, since_us = ?
WHERE session = ? AND epoch = ?`), replica, micros(at), session, epoch)
			if err != nil {
				return err
			}
			if n, err = res.RowsAffected(); err != nil {
				return err
			}
		}
		var err error
		o, err = scanOwner(tx.QueryRowContext(ctx, d.q(ownerQuery+` WHERE s.id = ?`), session))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		if n == 0 {
			return ErrConflict
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrConflict):
		return o, fmt.Errorf("claim session %s: owned by %q at epoch %d, not %d: %w", session, o.Replica, o.Epoch, epoch, err)
	case err != nil:
		return Owner{}, fmt.Errorf("claim session %s: %w", session, err)
	}
	return o, nil
}

// ReleaseSessions gives up every session replica owns.
func (d *db) ReleaseSessions(ctx context.Context, replica string) (int, error) {
	if replica == "" {
		return 0, errors.New("release sessions: empty replica id")
	}
	var n int64
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, d.q(`UPDATE session_owners SET owner = '', epoch = epoch + 1, since_us = ? WHERE owner = ?`),
			micros(now()), replica)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("release the sessions of replica %s: %w", replica, err)
	}
	return int(n), nil
}
