package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// db implements Store on database/sql for both backends. The dialects
// differ only in placeholders, error codes and how writers are serialized.
type db struct {
	sql    *sql.DB
	dollar bool // $1 placeholders (PostgreSQL) instead of ?
	// c runs every write of this process, one group transaction at a time
	// (commit.go). SQLite has one writer anyway; other processes on the
	// same file are kept apart by the busy timeout.
	c           *committer
	fkViolation func(error) bool
	retryable   func(error) bool // see committer.retryable; nil: none
	// disconnected reports an error that says the database could not be
	// reached or the connection was lost; writes then wait for it (see
	// committer.commit). nil: never (SQLite).
	disconnected func(error) bool
	// rolledBack reports an error the server answered a COMMIT with as it
	// ended the connection (a shutdown): the transaction was not
	// committed, so the writes can run again once the server is back. A
	// connection lost without an answer leaves the outcome unknown, and
	// is not retried. nil: never (SQLite).
	rolledBack func(error) bool
	// stmts holds the prepared statements of the writes every step makes
	// (query → *sql.Stmt), each prepared once per connection (exec).
	stmts sync.Map
}

func (d *db) q(query string) string { return rebind(d.dollar, query) }

// exec runs query (in ? form) in tx as a statement prepared once: a step
// of a session makes the same half-dozen writes every time, and parsing
// them again each time was half of the CPU of its commit in SQLite. A
// query that cannot be prepared now (no connection to spare, say) runs
// as it did before, parsed in tx.
func (d *db) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := d.stmt(ctx, query)
	if err != nil {
		return tx.ExecContext(ctx, d.q(query), args...)
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// queryRow is exec for a statement that returns a row.
func (d *db) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	st, err := d.stmt(ctx, query)
	if err != nil {
		return tx.QueryRowContext(ctx, d.q(query), args...)
	}
	return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
}

// stmt returns query's prepared statement, preparing it the first time.
// database/sql prepares it again on each connection that runs it, once.
func (d *db) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := d.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := d.sql.PrepareContext(ctx, d.q(query))
	if err != nil {
		return nil, err
	}
	if old, loaded := d.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return old.(*sql.Stmt), nil
	}
	return st, nil
}

// Close stores the writes already queued, then closes the database.
func (d *db) Close() error {
	d.c.close()
	d.stmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
	return d.sql.Close()
}

type scanner interface{ Scan(dest ...any) error }

// micros and fromMicros convert the stored time: microseconds since the
// epoch, read back in UTC.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// optMicros stores a zero time as NULL.
func optMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromOptMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromMicros(n.Int64)
}

// now is the stored form of the current time.
func now() time.Time { return fromMicros(time.Now().UnixMicro()) }

// jsonArg checks a payload and returns its stored form: NULL when empty.
func jsonArg(field string, m json.RawMessage) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if !json.Valid(m) {
		return nil, fmt.Errorf("%s: invalid JSON", field)
	}
	return string(m), nil
}

func jsonArgs(fields ...any) ([]any, error) {
	out := make([]any, 0, len(fields)/2)
	for i := 0; i < len(fields); i += 2 {
		v, err := jsonArg(fields[i].(string), fields[i+1].(json.RawMessage))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func (d *db) exists(ctx context.Context, session string) error {
	var one int
	err := d.sql.QueryRowContext(ctx, d.q(`SELECT 1 FROM sessions WHERE id = ?`), session).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("session %s: %w", session, ErrNotFound)
	}
	return err
}

// bump increments one of a session's counters and returns the new value.
// It also locks the session's row until the transaction ends, which is
// what keeps sequence numbers gap-free across processes.
func (d *db) bump(ctx context.Context, tx *sql.Tx, session, counter string) (int64, error) {
	var n int64
	err := d.queryRow(ctx, tx, `UPDATE sessions SET `+counter+` = `+counter+` + 1 WHERE id = ? RETURNING `+counter, session).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("session %s: %w", session, ErrNotFound)
	}
	return n, err
}

// Sessions.

const sessionCols = `id, kind, title, status, config, state, url, step, error, created_us, updated_us, conn`

func scanSession(sc scanner) (Session, error) {
	var s Session
	var config, state []byte
	var created, updated int64
	err := sc.Scan(&s.ID, &s.Kind, &s.Title, &s.Status, &config, &state, &s.URL, &s.Step, &s.Error, &created, &updated, &s.Conn)
	s.Config, s.State = raw(config), raw(state)
	s.Created, s.Updated = fromMicros(created), fromMicros(updated)
	return s, err
}

func sessionArgs(s Session) ([]any, error) {
	js, err := jsonArgs("config", s.Config, "state", s.State)
	if err != nil {
		return nil, err
	}
	return []any{s.Kind, s.Title, s.Status, js[0], js[1], s.URL, s.Step, s.Error, micros(s.Created), micros(s.Updated), s.ID}, nil
}

// CreateSession inserts s; an existing id is ErrConflict.
func (d *db) CreateSession(ctx context.Context, s Session) error {
	if s.ID == "" {
		return errors.New("create session: empty id")
	}
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return d.insertSession(ctx, tx, s) })
	if err != nil {
		return fmt.Errorf("create session %s: %w", s.ID, err)
	}
	return nil
}

// insertSession inserts s in tx; an existing id is ErrConflict. Conn is
// set here only: a session never changes connection.
func (d *db) insertSession(ctx context.Context, tx *sql.Tx, s Session) error {
	args, err := sessionArgs(s)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, d.q(`INSERT INTO sessions (kind, title, status, config, state, url, step, error, created_us, updated_us, id, conn)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`), append(args, s.Conn)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ErrConflict
	}
	return nil
}

// UpdateSession replaces the stored s (by ID); an unknown id is ErrNotFound.
func (d *db) UpdateSession(ctx context.Context, s Session) error {
	o, err := updateSessionOp(s)
	return d.run(ctx, o, err)
}

func updateSessionOp(s Session) (op, error) {
	args, err := sessionArgs(s)
	if err != nil {
		return nil, fmt.Errorf("update session %s: %w", s.ID, err)
	}
	return func(ctx context.Context, d *db, tx *sql.Tx) (func(), error) {
		res, err := d.exec(ctx, tx, `UPDATE sessions SET kind = ?, title = ?, status = ?, config = ?, state = ?,
url = ?, step = ?, error = ?, created_us = ?, updated_us = ? WHERE id = ?`, args...)
		if err == nil {
			var n int64
			if n, err = res.RowsAffected(); err == nil && n == 0 {
				err = ErrNotFound
			}
		}
		if err != nil {
			return nil, fmt.Errorf("update session %s: %w", s.ID, err)
		}
		return nil, nil
	}, nil
}

// Session returns one session; an unknown id is ErrNotFound.
func (d *db) Session(ctx context.Context, id string) (Session, error) {
	s, err := scanSession(d.sql.QueryRowContext(ctx, d.q(`SELECT `+sessionCols+` FROM sessions WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("session %s: %w", id, ErrNotFound)
	} else if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	return s, nil
}

// Sessions lists every session, newest first.
func (d *db) Sessions(ctx context.Context) ([]Session, error) {
	ss, err := query(ctx, d, scanSession, `SELECT `+sessionCols+` FROM sessions ORDER BY created_us DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return ss, nil
}

// query runs a query and scans every row with scan.
func query[T any](ctx context.Context, d *db, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := d.sql.QueryContext(ctx, d.q(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// listOf runs a per-session query; an empty answer for a session that does
// not exist is ErrNotFound.
func listOf[T any](ctx context.Context, d *db, what, session string, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	out, err := query(ctx, d, scan, q, args...)
	if err == nil && len(out) == 0 {
		err = d.exists(ctx, session)
	}
	if err != nil {
		return nil, fmt.Errorf("%s of session %s: %w", what, session, err)
	}
	return out, nil
}

// Events.

func scanEvent(sc scanner) (Event, error) {
	var e Event
	var data []byte
	var t int64
	err := sc.Scan(&e.Session, &e.Seq, &e.Type, &data, &t)
	e.Data, e.Time = raw(data), fromMicros(t)
	return e, err
}

// AppendEvent stores e with the next Seq of its session and sets e.Seq.
// A zero e.Time is set to now; e.Time is set to the stored time.
func (d *db) AppendEvent(ctx context.Context, e *Event) error {
	o, err := appendEventOp(e)
	return d.run(ctx, o, err)
}

func appendEventOp(e *Event) (op, error) {
	if e == nil {
		return nil, errors.New("append event: nil event")
	}
	data, err := jsonArg("data", e.Data)
	if err != nil {
		return nil, fmt.Errorf("append event to session %s: %w", e.Session, err)
	}
	t := e.Time
	if t.IsZero() {
		t = now()
	}
	return func(ctx context.Context, d *db, tx *sql.Tx) (func(), error) {
		seq, err := d.bump(ctx, tx, e.Session, "event_seq")
		if err == nil {
			_, err = d.exec(ctx, tx, `INSERT INTO events (session, seq, type, data, time_us) VALUES (?, ?, ?, ?, ?)`,
				e.Session, seq, e.Type, data, micros(t))
		}
		if err != nil {
			return nil, fmt.Errorf("append event to session %s: %w", e.Session, err)
		}
		return func() { e.Seq, e.Time = seq, fromMicros(micros(t)) }, nil
	}, nil
}

// Events returns a session's events with Seq > after, in order.
func (d *db) Events(ctx context.Context, session string, after int64) ([]Event, error) {
	return listOf(ctx, d, "events", session, scanEvent,
		`SELECT session, seq, type, data, time_us FROM events WHERE session = ? AND seq > ? ORDER BY seq`, session, after)
}

// Messages.

func scanMessage(sc scanner) (Message, error) {
	var m Message
	var content []byte
	var t int64
	err := sc.Scan(&m.Session, &m.Seq, &m.Role, &content, &m.CallID, &t)
	m.Content, m.Time = raw(content), fromMicros(t)
	return m, err
}

// AppendMessage stores m with the next message Seq of its session and sets
// m.Seq. A zero m.Time is set to now; m.Time is set to the stored time.
func (d *db) AppendMessage(ctx context.Context, m *Message) error {
	o, err := appendMessageOp(m)
	return d.run(ctx, o, err)
}

func appendMessageOp(m *Message) (op, error) {
	if m == nil {
		return nil, errors.New("append message: nil message")
	}
	content, err := jsonArg("content", m.Content)
	if err != nil {
		return nil, fmt.Errorf("append message to session %s: %w", m.Session, err)
	}
	t := m.Time
	if t.IsZero() {
		t = now()
	}
	return func(ctx context.Context, d *db, tx *sql.Tx) (func(), error) {
		seq, err := d.bump(ctx, tx, m.Session, "message_seq")
		if err == nil {
			_, err = d.exec(ctx, tx, `INSERT INTO messages (session, seq, role, content, call_id, time_us) VALUES (?, ?, ?, ?, ?, ?)`,
				m.Session, seq, m.Role, content, m.CallID, micros(t))
		}
		if err != nil {
			return nil, fmt.Errorf("append message to session %s: %w", m.Session, err)
		}
		return func() { m.Seq, m.Time = seq, fromMicros(micros(t)) }, nil
	}, nil
}

// Messages returns a session's messages in order.
func (d *db) Messages(ctx context.Context, session string) ([]Message, error) {
	return listOf(ctx, d, "messages", session, scanMessage,
		`SELECT session, seq, role, content, call_id, time_us FROM messages WHERE session = ? ORDER BY seq`, session)
}

// Tool calls.

func scanToolCall(sc scanner) (ToolCall, error) {
	var c ToolCall
	var input, result []byte
	var created, updated int64
	err := sc.Scan(&c.Session, &c.ID, &c.Step, &c.Name, &input, &c.Status, &result, &created, &updated)
	c.Input, c.Result = raw(input), raw(result)
	c.Created, c.Updated = fromMicros(created), fromMicros(updated)
	return c, err
}

// PutToolCall inserts or replaces a call, by (Session, ID). A replaced call
// keeps its place in ToolCalls' order.
func (d *db) PutToolCall(ctx context.Context, c ToolCall) error {
	o, err := putToolCallOp(c)
	return d.run(ctx, o, err)
}

func putToolCallOp(c ToolCall) (op, error) {
	if c.ID == "" {
		return nil, fmt.Errorf("put tool call in session %s: empty id", c.Session)
	}
	js, err := jsonArgs("input", c.Input, "result", c.Result)
	if err != nil {
		return nil, fmt.Errorf("put tool call %s: %w", c.ID, err)
	}
	return func(ctx context.Context, d *db, tx *sql.Tx) (func(), error) {
		ord, err := d.bump(ctx, tx, c.Session, "call_seq")
		if err == nil {
			_, err = d.exec(ctx, tx, `INSERT INTO tool_calls (session, id, ord, step, name, input, status, result, created_us, updated_us)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session, id) DO UPDATE SET step = excluded.step, name = excluded.name, input = excluded.input,
status = excluded.status, result = excluded.result, created_us = excluded.created_us, updated_us = excluded.updated_us`,
				c.Session, c.ID, ord, c.Step, c.Name, js[0], c.Status, js[1], micros(c.Created), micros(c.Updated))
		}
		if err != nil {
			return nil, fmt.Errorf("put tool call %s: %w", c.ID, err)
		}
		return nil, nil
	}, nil
}

// ToolCalls returns a session's calls in the order they were first put.
func (d *db) ToolCalls(ctx context.Context, session string) ([]ToolCall, error) {
	return listOf(ctx, d, "tool calls", session, scanToolCall,
		`SELECT session, id, step, name, input, status, result, created_us, updated_us FROM tool_calls WHERE session = ? ORDER BY ord`, session)
}

// Approvals.

const approvalCols = `id, session, call_id, idx, rule, reason, request, status, decision, decided_by, created_us, deadline_us, decided_us`

func scanApproval(sc scanner) (Approval, error) {
	var a Approval
	var request, decision []byte
	var created int64
	var deadline, decided sql.NullInt64
	err := sc.Scan(&a.ID, &a.Session, &a.CallID, &a.Index, &a.Rule, &a.Reason, &request, &a.Status, &decision, &a.DecidedBy,
		&created, &deadline, &decided)
	a.Request, a.Decision = raw(request), raw(decision)
	a.Created, a.Deadline, a.Decided = fromMicros(created), fromOptMicros(deadline), fromOptMicros(decided)
	return a, err
}

// PutApproval inserts or replaces an approval, by ID. An unknown session is
// ErrNotFound.
func (d *db) PutApproval(ctx context.Context, a Approval) error {
	if a.ID == "" {
		return fmt.Errorf("put approval in session %s: empty id", a.Session)
	}
	js, err := jsonArgs("request", a.Request, "decision", a.Decision)
	if err != nil {
		return fmt.Errorf("put approval %s: %w", a.ID, err)
	}
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, d.q(`INSERT INTO approvals (`+approvalCols+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET session = excluded.session, call_id = excluded.call_id, idx = excluded.idx,
rule = excluded.rule, reason = excluded.reason, request = excluded.request, status = excluded.status,
decision = excluded.decision, decided_by = excluded.decided_by, created_us = excluded.created_us,
deadline_us = excluded.deadline_us, decided_us = excluded.decided_us`),
			a.ID, a.Session, a.CallID, a.Index, a.Rule, a.Reason, js[0], a.Status, js[1], a.DecidedBy,
			micros(a.Created), optMicros(a.Deadline), optMicros(a.Decided))
		if d.fkViolation(err) {
			return fmt.Errorf("session %s: %w", a.Session, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("put approval %s: %w", a.ID, err)
	}
	return nil
}

// Approval returns one approval; an unknown id is ErrNotFound.
func (d *db) Approval(ctx context.Context, id string) (Approval, error) {
	a, err := d.approval(ctx, d.sql, id)
	if err != nil {
		return Approval{}, fmt.Errorf("approval %s: %w", id, err)
	}
	return a, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (d *db) approval(ctx context.Context, q querier, id string) (Approval, error) {
	a, err := scanApproval(q.QueryRowContext(ctx, d.q(`SELECT `+approvalCols+` FROM approvals WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, ErrNotFound
	}
	return a, err
}

// Approvals lists approvals matching f, oldest first.
func (d *db) Approvals(ctx context.Context, f ApprovalFilter) ([]Approval, error) {
	var where []string
	var args []any
	if f.Session != "" {
		where, args = append(where, "session = ?"), append(args, f.Session)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	q := `SELECT ` + approvalCols + ` FROM approvals`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	as, err := query(ctx, d, scanApproval, q+` ORDER BY created_us, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return as, nil
}

// Decide moves a pending approval to status, atomically: if it is no
// longer pending, it returns ErrConflict and the stored approval. status
// must be a decided status (approved, denied, edited or expired); a zero at
// is now.
func (d *db) Decide(ctx context.Context, id, status string, decision json.RawMessage, by string, at time.Time) (Approval, error) {
	switch status {
	case ApprovalApproved, ApprovalDenied, ApprovalEdited, ApprovalExpired:
	default:
		return Approval{}, fmt.Errorf("decide approval %s: status %q is not a decision", id, status)
	}
	dec, err := jsonArg("decision", decision)
	if err != nil {
		return Approval{}, fmt.Errorf("decide approval %s: %w", id, err)
	}
	if at.IsZero() {
		at = now()
	}
	var a Approval
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, d.q(`UPDATE approvals SET status = ?, decision = ?, decided_by = ?, decided_us = ?
WHERE id = ? AND status = ?`), status, dec, by, micros(at), id, ApprovalPending)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if a, err = d.approval(ctx, tx, id); err != nil {
			return err
		}
		if n == 0 {
			return ErrConflict
		}
		return nil
	})
	if errors.Is(err, ErrConflict) {
		return a, fmt.Errorf("decide approval %s: already %s: %w", id, a.Status, err)
	} else if err != nil {
		return Approval{}, fmt.Errorf("decide approval %s: %w", id, err)
	}
	return a, nil
}

// Audit log.

func scanAudit(sc scanner) (Audit, error) {
	var a Audit
	var detail []byte
	var t int64
	err := sc.Scan(&a.ID, &t, &a.Actor, &a.Action, &a.Session, &a.Subject, &detail)
	a.Detail, a.Time = raw(detail), fromMicros(t)
	return a, err
}

// AppendAudit stores a with the next audit id and sets a.ID. A zero a.Time
// is set to now; a.Time is set to the stored time.
func (d *db) AppendAudit(ctx context.Context, a *Audit) error {
	if a == nil {
		return errors.New("append audit: nil entry")
	}
	detail, err := jsonArg("detail", a.Detail)
	if err != nil {
		return fmt.Errorf("append audit %s: %w", a.Action, err)
	}
	t := a.Time
	if t.IsZero() {
		t = now()
	}
	var id int64
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, d.q(`INSERT INTO audit (time_us, actor, action, session, subject, detail)
VALUES (?, ?, ?, ?, ?, ?) RETURNING id`), micros(t), a.Actor, a.Action, a.Session, a.Subject, detail).Scan(&id)
	})
	if err != nil {
		return fmt.Errorf("append audit %s: %w", a.Action, err)
	}
	a.ID, a.Time = id, fromMicros(micros(t))
	return nil
}

// AuditLog returns the audit entries of a session ("" for all), oldest first.
func (d *db) AuditLog(ctx context.Context, session string) ([]Audit, error) {
	q := `SELECT id, time_us, actor, action, session, subject, detail FROM audit`
	var args []any
	if session != "" {
		q, args = q+` WHERE session = ?`, []any{session}
	}
	as, err := query(ctx, d, scanAudit, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return as, nil
}

// Shots.

func scanShot(sc scanner) (Shot, error) {
	var s Shot
	var t int64
	err := sc.Scan(&s.Session, &s.Name, &s.FrameID, &s.Step, &s.Bytes, &t)
	s.Time = fromMicros(t)
	return s, err
}

// PutShot inserts or replaces a shot, by (Session, Name). An unknown
// session is ErrNotFound.
func (d *db) PutShot(ctx context.Context, s Shot) error {
	o, err := putShotOp(s)
	return d.run(ctx, o, err)
}

func putShotOp(s Shot) (op, error) {
	if s.Name == "" {
		return nil, fmt.Errorf("put shot in session %s: empty name", s.Session)
	}
	return func(ctx context.Context, d *db, tx *sql.Tx) (func(), error) {
		_, err := d.exec(ctx, tx, `INSERT INTO shots (session, name, frame_id, step, bytes, time_us) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (session, name) DO UPDATE SET frame_id = excluded.frame_id, step = excluded.step, bytes = excluded.bytes,
time_us = excluded.time_us`, s.Session, s.Name, s.FrameID, s.Step, s.Bytes, micros(s.Time))
		if d.fkViolation(err) {
			err = fmt.Errorf("session %s: %w", s.Session, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("put shot %s: %w", s.Name, err)
		}
		return nil, nil
	}, nil
}

// Shots returns a session's shots by time, then name.
func (d *db) Shots(ctx context.Context, session string) ([]Shot, error) {
	return listOf(ctx, d, "shots", session, scanShot,
		`SELECT session, name, frame_id, step, bytes, time_us FROM shots WHERE session = ? ORDER BY time_us, name`, session)
}
