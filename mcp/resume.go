package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/screen"
)

// Sessions outlive their server process under spotter serve: the server
// that opens a session records its connection (Config.Attach's Conn), and
// after a restart, or on the replica that adopts it, the session is opened
// again with Resume: a display at its last page, attached as before, in
// the connection it belonged to. When the client comes back with that
// connection's Mcp-Session-Id, Handler connects a transport of that id
// with the stored initialize parameters (what the client said it can do),
// and the connection goes on: its default session, its other sessions,
// its idle timeout.

// Conn is the client connection a session belongs to, as a server that
// keeps sessions across restarts and replicas records it, and gives it
// back to Resume.
type Conn struct {
	ID      string          `json:"id"`                // the Mcp-Session-Id; "" over stdio
	Client  string          `json:"client,omitempty"`  // the MCP client its token names; "" for none
	Init    json.RawMessage `json:"init,omitempty"`    // the parameters of its initialize request
	Default bool            `json:"default,omitempty"` // the session is the connection's default one
}

// Resumed is a session to open again, in the connection it belonged to.
type Resumed struct {
	ID   string // the session's id, which it keeps
	URL  string // the page to open: its last one
	Conn Conn
	// FrameSeq is the number of the session's latest screenshot: the
	// new display's are numbered after it, so that a frame id never
	// names two screenshots.
	FrameSeq int
	// Note is said with the result of the session's next call.
	Note string
	// Attach attaches the new display as Config.Attach did the first
	// (what supervises the session: approvals, trace, record).
	Attach func(ctx context.Context, d Display) (Attached, error)
}

// adoptedConn is a connection of resumed sessions: waiting for its
// client (t nil), or connected again.
type adoptedConn struct {
	id, client string
	init       *sdk.InitializeParams
	def        string // its default session's id

	mu    sync.Mutex // connecting; the fields below
	t     *sdk.StreamableServerTransport
	ss    *sdk.ServerSession
	posts int         // POSTs in progress: the idle timer waits for them
	timer *time.Timer // closes the connection once idle
}

// Resume opens session r.ID again (after a restart, or on the replica
// that adopted it): a display at r.URL, attached with r.Attach, its first
// screenshot taken, in its connection r.Conn, which a request naming
// r.Conn.ID connects again (Handler). It is let in past MaxSessions, as
// it was let in before. A session nobody calls is closed after the idle
// timeout, as any.
func (s *Server) Resume(ctx context.Context, r Resumed) error {
	if r.Conn.ID == "" || len(r.Conn.Init) == 0 {
		return fmt.Errorf("resume session %s: it has no streamable HTTP connection to resume in", r.ID)
	}
	var init sdk.InitializeParams
	if err := json.Unmarshal(r.Conn.Init, &init); err != nil {
		return fmt.Errorf("resume session %s: its connection's initialize parameters: %w", r.ID, err)
	}
	s.mu.Lock()
	if _, taken := s.sessions[r.ID]; taken || s.closed {
		s.mu.Unlock()
		return fmt.Errorf("resume session %s: the server is closed or has it already", r.ID)
	}
	s.sessions[r.ID] = nil // reserved while the display opens
	s.mu.Unlock()

	se, err := s.startSession(ctx, r.ID, r.URL, r.FrameSeq, r.Attach)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || s.closed {
		delete(s.sessions, r.ID)
		if err == nil {
			se.close(context.WithoutCancel(ctx))
			err = errors.New("the server is closed")
		}
		return fmt.Errorf("resume session %s: %w", r.ID, err)
	}
	se.conn, se.client, se.used, se.note = r.Conn.ID, r.Conn.Client, time.Now(), r.Note
	s.sessions[r.ID] = se
	a := s.adopted[r.Conn.ID]
	if a == nil {
		a = &adoptedConn{id: r.Conn.ID, client: r.Conn.Client, init: &init}
		s.adopted[a.id] = a
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Conn.Default {
		a.def = r.ID
	}
	if a.ss != nil { // its client came back while another session resumed
		se.owner = a.ss
		if r.Conn.Default {
			s.defaults[a.ss] = r.ID
		}
	}
	s.log.InfoContext(ctx, "session resumed", "session", r.ID, "url", r.URL)
	return nil
}

// Holds reports whether connection id (an Mcp-Session-Id) has sessions
// on this server, or was resumed here: its requests are answered here.
func (s *Server) Holds(id string) bool {
	if id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.adopted[id] != nil || len(s.idsOf(func(se *session) bool { return se.conn == id })) > 0
}

// forgetAdopted forgets connection id if it was resumed here, its client
// has not come back and it has no session left. It runs under mu.
func (s *Server) forgetAdopted(id string) {
	a := s.adopted[id]
	if a == nil {
		return
	}
	a.mu.Lock()
	waiting := a.ss == nil
	a.mu.Unlock()
	if waiting && len(s.idsOf(func(se *session) bool { return se.conn == id })) == 0 {
		delete(s.adopted, id)
	}
}

// Handler serves MCP's streamable HTTP transport: the SDK's handler, but
// for the connections of resumed sessions (Resume), which it connects
// again when their client comes back. Requests that reach a loopback
// listener with another Host header are refused (DNS rebinding).
func (s *Server) Handler() http.Handler {
	var opts sdk.StreamableHTTPOptions
	if s.cfg.IdleTimeout > 0 {
		opts.SessionTimeout = s.cfg.IdleTimeout
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, &opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			s.mu.Lock()
			a := s.adopted[id]
			s.mu.Unlock()
			if a != nil {
				s.serveAdopted(w, r, a)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// serveAdopted answers a request of a resumed connection as the SDK's
// handler answers one of its own: the client must be the one that opened
// it (its token's), a POST holds off the idle timeout, a DELETE ends it.
// (These connections live only under spotter serve, whose token every
// request carries: no DNS rebinding check is needed.)
func (s *Server) serveAdopted(w http.ResponseWriter, r *http.Request, a *adoptedConn) {
	user := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	if a.client != "" && user != a.client {
		http.Error(w, "session user mismatch", http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodPost:
	case http.MethodDelete:
		a.mu.Lock()
		ss := a.ss
		a.mu.Unlock()
		if ss != nil {
			ss.Close()
		} else {
			s.closeConn(a.id)
		}
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	t, err := s.reconnect(r.Context(), a)
	if err != nil {
		s.log.ErrorContext(r.Context(), "connect a resumed MCP connection again", "connection", a.id, "err", err)
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPost {
		a.mu.Lock()
		a.posts++
		if a.timer != nil {
			a.timer.Stop()
		}
		a.mu.Unlock()
		defer func() {
			a.mu.Lock()
			a.posts--
			if a.timer != nil && a.posts == 0 {
				a.timer.Reset(s.cfg.IdleTimeout)
			}
			a.mu.Unlock()
		}()
		r.Body = http.MaxBytesReader(w, r.Body, sdk.DefaultMaxRequestBodyBytes)
	}
	t.ServeHTTP(w, r)
}

// reconnect returns the transport of a resumed connection, connecting it
// the first time: a session of the SDK's server in the state the client
// left it (initialized, with its capabilities), to which the connection's
// sessions then belong.
func (s *Server) reconnect(ctx context.Context, a *adoptedConn) (*sdk.StreamableServerTransport, error) {
	a.mu.Lock()
	if a.t != nil {
		defer a.mu.Unlock()
		return a.t, nil
	}
	t := &sdk.StreamableServerTransport{SessionID: a.id}
	ss, err := s.srv.Connect(ctx, t, &sdk.ServerSessionOptions{State: &sdk.ServerSessionState{
		InitializeParams: a.init, InitializedParams: &sdk.InitializedParams{}}})
	if err != nil {
		a.mu.Unlock()
		return nil, err
	}
	a.t, a.ss = t, ss
	if s.cfg.IdleTimeout > 0 {
		a.timer = time.AfterFunc(s.cfg.IdleTimeout, func() { ss.Close() })
	}
	def := a.def
	a.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, se := range s.sessions {
		if se != nil && se.conn == a.id {
			se.owner = ss
		}
	}
	if se := s.sessions[def]; def != "" && se != nil {
		s.defaults[ss] = def
	}
	s.watch(ss)
	s.log.InfoContext(ctx, "MCP connection of resumed sessions connected again", "connection", a.id)
	return t, nil
}

// closeConn closes the sessions of connection id.
func (s *Server) closeConn(id string) {
	s.mu.Lock()
	ids := s.idsOf(func(se *session) bool { return se.conn == id })
	s.mu.Unlock()
	for _, sid := range ids {
		s.closeSession(context.Background(), sid)
	}
}

// numbered names a session's screenshots f0001, f0002, ... after seq,
// whatever display takes them: a display opened anew (a resumed
// session's) numbers its own from 1 again, and a frame id must name one
// screenshot.
type numbered struct {
	Display
	mu  sync.Mutex
	seq int
}

func (n *numbered) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	shot, err := n.Display.Capture(ctx, o)
	if err != nil {
		return shot, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	shot.Frame.ID = fmt.Sprintf("f%04d", n.seq)
	return shot, nil
}
