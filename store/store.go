// Package store keeps what a Spotter server must not lose: sessions, their
// event streams, messages, tool calls, approvals, the audit log and the
// index of trace screenshots (the screenshots themselves are files).
//
// Two backends implement Store with one schema: SQLite (modernc.org/sqlite,
// the default, one file in the server's data directory) and PostgreSQL
// (pgx), which several server replicas can share. Open picks one by the DSN.
//
// Every method is durable when it returns: a kill -9 right after loses
// nothing that was acknowledged. Writes that run at the same time share a
// transaction and one sync to disk (group commit), and a Batch stores
// several writes together, so durability costs one sync per batch of
// writes rather than one per write. Records are plain data; payloads the
// store does not interpret are JSON (json.RawMessage).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

var (
	// ErrNotFound is returned for an unknown id.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned when a write lost a race: an approval that
	// was already decided, a session id that exists.
	ErrConflict = errors.New("conflict")
)

// Session statuses.
const (
	StatusRunning = "running" // the loop is working
	StatusWaiting = "waiting" // the turn stopped for the client (tool results, permissions)
	StatusIdle    = "idle"    // the model ended its turn; a user message continues it
	StatusStopped = "stopped" // stopped by a person
	StatusFailed  = "failed"  // ended by an error, the step cap, or a dead display
)

// Session is one supervised session (or executor session).
type Session struct {
	ID      string          `json:"id"`
	Kind    string          `json:"kind"` // "agent" (the server runs the model) or "executor" (the client does)
	Title   string          `json:"title,omitempty"`
	Status  string          `json:"status"`
	Config  json.RawMessage `json:"config,omitempty"` // the request that created it, secrets removed
	State   json.RawMessage `json:"state,omitempty"`  // the model adapter's saved conversation (harness.Stateful)
	URL     string          `json:"url,omitempty"`    // the display's last page URL, to relaunch at
	Step    int             `json:"step"`
	Error   string          `json:"error,omitempty"`
	Created time.Time       `json:"created"`
	Updated time.Time       `json:"updated"`
	// Conn is the MCP connection (its Mcp-Session-Id) that a session of
	// kind mcp belongs to, set when it is created; "" for others. The
	// sessions of one connection are owned, and adopted, together.
	Conn string `json:"-"`
}

// Event is one entry of a session's event stream, as sent over SSE.
type Event struct {
	Session string          `json:"session"`
	Seq     int64           `json:"seq"` // 1, 2, 3... per session, assigned by AppendEvent
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
	Time    time.Time       `json:"time"`
}

// Message is one entry of a session's history: role "user", "assistant"
// (Content holds the text and ToolCalls the calls) or "tool" (a tool's
// result for CallID).
type Message struct {
	Session string          `json:"session"`
	Seq     int64           `json:"seq"` // assigned by AppendMessage
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"toolCallId,omitempty"`
	Time    time.Time       `json:"time"`
}

// Tool call statuses.
const (
	CallPending    = "pending"    // proposed, not yet resolved
	CallRunning    = "running"    // a server tool is executing
	CallPermission = "permission" // waiting for a human's decision
	CallClient     = "client"     // waiting for the client's result
	CallDone       = "done"
	CallFailed     = "failed"
	CallDenied     = "denied"
)

// ToolCall is one call the model proposed and how it was resolved.
type ToolCall struct {
	Session string          `json:"session"`
	ID      string          `json:"toolCallId"`
	Step    int             `json:"step"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Status  string          `json:"status"`
	Result  json.RawMessage `json:"result,omitempty"`
	Created time.Time       `json:"created"`
	Updated time.Time       `json:"updated"`
}

// Approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalEdited   = "edited"
	ApprovalExpired  = "expired" // the timeout passed: counts as a denial
)

// Approval is one request for a human's decision.
type Approval struct {
	ID      string          `json:"id"`
	Session string          `json:"session"`
	CallID  string          `json:"toolCallId"`
	Index   int             `json:"index"` // action index in the call's batch; -1 for provider safety checks
	Rule    string          `json:"rule"`  // the rule that fired
	Reason  string          `json:"reason"`
	Request json.RawMessage `json:"request"` // what the human is shown: action, target, marker, shot, model text
	Status  string          `json:"status"`
	// Decision holds the decision's details (reason, edit) once decided.
	Decision  json.RawMessage `json:"decision,omitempty"`
	DecidedBy string          `json:"decidedBy,omitempty"`
	Created   time.Time       `json:"created"`
	Deadline  time.Time       `json:"deadline,omitzero"`
	Decided   time.Time       `json:"decided,omitzero"`
}

// Audit is one entry of the audit log: who did what, when, and what they saw.
type Audit struct {
	ID      int64           `json:"id"` // assigned by AppendAudit
	Time    time.Time       `json:"time"`
	Actor   string          `json:"actor"`  // "operator:<name>", "token:<id>", "system"
	Action  string          `json:"action"` // "approve", "deny", "edit", "expire", "login", "takeover", ...
	Session string          `json:"session,omitempty"`
	Subject string          `json:"subject,omitempty"` // an approval id, a call id
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// Shot indexes one trace screenshot file.
type Shot struct {
	Session string    `json:"session"`
	Name    string    `json:"name"` // file name, relative to the session's trace directory
	FrameID string    `json:"frameId"`
	Step    int       `json:"step"`
	Bytes   int64     `json:"bytes"`
	Time    time.Time `json:"time"`
}

// Replica is one server process sharing the database (spotter serve with
// --advertise): where the others reach it, how busy it is, and its lease.
type Replica struct {
	ID   string `json:"id"`
	Addr string `json:"addr"` // base URL, "http://10.1.2.3:8080"
	// Incarnation names the process that holds the id (one per start):
	// a second process with the same id is refused while the first one's
	// lease runs (Heartbeat).
	Incarnation string    `json:"incarnation,omitempty"`
	Sessions    int       `json:"sessions"` // sessions it runs
	Capacity    int       `json:"capacity"` // sessions it takes; 0: not said
	Draining    bool      `json:"draining"` // it takes no new sessions
	Started     time.Time `json:"started"`
	Renewed     time.Time `json:"renewed"`
	Expires     time.Time `json:"expires"` // the lease: gone after this
}

// Live reports whether r's lease runs at now.
func (r Replica) Live(now time.Time) bool { return now.Before(r.Expires) }

// Owner says which replica owns a session: the one that runs its browser.
type Owner struct {
	Session string    `json:"session"`
	Replica string    `json:"replica"` // "" when released or never owned
	Epoch   int64     `json:"epoch"`   // grows with every change of owner; 0: never owned
	Since   time.Time `json:"since,omitzero"`
	// Addr and Expires are the owning replica's, zero when its row is gone.
	Addr    string    `json:"addr,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
	// Conn is the session's Session.Conn: orphans of one MCP connection
	// are adopted together.
	Conn string `json:"conn,omitempty"`
}

// Live reports whether the owner's lease runs at now.
func (o Owner) Live(now time.Time) bool { return o.Replica != "" && now.Before(o.Expires) }

// ApprovalFilter selects approvals; empty fields match everything.
type ApprovalFilter struct {
	Session string
	Status  string
}

// Store is the persistence a server needs. Implementations are safe for
// concurrent use, and sequence numbers they assign are gap-free per session
// even with several processes sharing one database.
//
// Times are kept to the microsecond and read back in UTC. A zero time is
// stored as given, except that the Append methods and Decide take it as
// now; the Append methods write the stored Seq (or ID) and Time back into
// their argument. Invalid JSON in a payload, an empty id, or a record of an
// unknown session (ErrNotFound) is an error that stores nothing.
type Store interface {
	// CreateSession inserts s; an existing id is ErrConflict.
	CreateSession(ctx context.Context, s Session) error
	// UpdateSession replaces the stored s (by ID); an unknown id is ErrNotFound.
	UpdateSession(ctx context.Context, s Session) error
	Session(ctx context.Context, id string) (Session, error)
	// Sessions lists every session, newest first.
	Sessions(ctx context.Context) ([]Session, error)

	// AppendEvent stores e with the next Seq of its session and sets e.Seq.
	AppendEvent(ctx context.Context, e *Event) error
	// Events returns a session's events with Seq > after, in order.
	Events(ctx context.Context, session string, after int64) ([]Event, error)

	// AppendMessage stores m with the next message Seq of its session.
	AppendMessage(ctx context.Context, m *Message) error
	Messages(ctx context.Context, session string) ([]Message, error)

	// PutToolCall inserts or replaces a call, by (Session, ID).
	PutToolCall(ctx context.Context, c ToolCall) error
	ToolCalls(ctx context.Context, session string) ([]ToolCall, error)

	// PutApproval inserts or replaces an approval, by ID.
	PutApproval(ctx context.Context, a Approval) error
	Approval(ctx context.Context, id string) (Approval, error)
	// Approvals lists approvals matching f, oldest first.
	Approvals(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	// Decide moves a pending approval to status, atomically: if it is no
	// longer pending, it returns ErrConflict and the stored approval.
	Decide(ctx context.Context, id, status string, decision json.RawMessage, by string, at time.Time) (Approval, error)

	// AppendAudit stores a with the next audit id and sets a.ID.
	AppendAudit(ctx context.Context, a *Audit) error
	// AuditLog returns the audit entries of a session ("" for all), oldest first.
	AuditLog(ctx context.Context, session string) ([]Audit, error)

	PutShot(ctx context.Context, s Shot) error
	Shots(ctx context.Context, session string) ([]Shot, error)

	// Write stores a Batch's writes in one transaction, in order: all of
	// them or none. It returns once they are durable.
	Write(ctx context.Context, b *Batch) error
	// WriteAsync queues a Batch and returns at once. done (if not nil)
	// is called once the batch is durable or failed, with Write's error,
	// in the order this Store's writes were queued, on the store's own
	// goroutine: it must be quick and must not call the store. An empty
	// batch stores nothing, and its done is called once every write
	// queued before it is done.
	WriteAsync(b *Batch, done func(error))

	// Ping checks that the database answers.
	Ping(ctx context.Context) error

	// Replicas and session ownership (cluster.go): several servers
	// sharing one database.

	// Heartbeat inserts or renews a replica's row. lapsed reports that the
	// row existed and its lease had run out before r.Renewed: the other
	// replicas may have taken its sessions over. A row whose lease runs at
	// r.Renewed and that another incarnation holds is not touched: that
	// is ErrConflict (two processes were given one replica id).
	Heartbeat(ctx context.Context, r Replica) (lapsed bool, err error)
	// Replicas lists every replica's row, by id.
	Replicas(ctx context.Context) ([]Replica, error)
	// DeleteReplica removes a replica's row; an unknown id is not an error.
	DeleteReplica(ctx context.Context, id string) error
	// CreateOwnedSession is CreateSession that also records replica as the
	// session's owner, in one transaction.
	CreateOwnedSession(ctx context.Context, s Session, replica string) error
	// Owner says who owns a session; an unknown session is ErrNotFound.
	Owner(ctx context.Context, session string) (Owner, error)
	// ConnOwner says who owns the newest session of an MCP connection
	// (Session.Conn), and so the connection; a connection without
	// sessions is ErrNotFound.
	ConnOwner(ctx context.Context, conn string) (Owner, error)
	// Orphans lists the sessions whose owner's lease has run out at now,
	// that were released, or that never had an owner: oldest first.
	Orphans(ctx context.Context, now time.Time) ([]Owner, error)
	// ClaimSession makes replica a session's owner if its ownership is
	// still at epoch (0: never owned), and returns the new Owner; if it
	// changed since, ErrConflict and the current Owner.
	ClaimSession(ctx context.Context, session, replica string, epoch int64, at time.Time) (Owner, error)
	// ReleaseSessions gives up every session replica owns, so that the
	// others adopt them at once, and returns how many.
	ReleaseSessions(ctx context.Context, replica string) (int, error)

	// Retention (retention.go): deleting finished sessions whole, and
	// work one replica at a time does under a lease.

	// DeleteSession deletes a session and every record of it but its
	// audit entries (events, messages, calls, approvals, the screenshot
	// index, its owner), and leaves a tombstone, in one transaction: all
	// of it or nothing. It deletes only while the session's status is one
	// of statuses and its Updated time is still updated (ErrConflict
	// otherwise: it changed since it was chosen). An unknown id is
	// ErrNotFound. Its files are the caller's.
	DeleteSession(ctx context.Context, id string, updated time.Time, statuses ...string) error
	// Deleted returns when DeleteSession deleted a session; ErrNotFound
	// when it did not (or its tombstone was pruned).
	Deleted(ctx context.Context, id string) (time.Time, error)
	// DeletedSince lists the sessions deleted after t, oldest first.
	DeletedSince(ctx context.Context, t time.Time) ([]Tombstone, error)
	// PruneDeleted removes the tombstones of sessions deleted before t,
	// and returns how many.
	PruneDeleted(ctx context.Context, before time.Time) (int, error)
	// AcquireLease takes the lease name for holder until expires, if it is
	// free, lapsed at now, or holder's already (a renewal), and reports
	// whether holder holds it.
	AcquireLease(ctx context.Context, name, holder string, now, expires time.Time) (bool, error)
	// ReleaseLease gives up holder's lease name, if it holds it.
	ReleaseLease(ctx context.Context, name, holder string) error

	Close() error
}

// Tombstone records a session that retention deleted.
type Tombstone struct {
	Session string    `json:"session"`
	Deleted time.Time `json:"deleted"`
}

// Finished lists the statuses of sessions that nothing runs: a person
// stopped them, they failed, or their model ended its turn. Retention
// deletes only these.
var Finished = []string{StatusStopped, StatusFailed, StatusIdle}
