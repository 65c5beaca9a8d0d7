// Package mcp serves Spotter's displays to any MCP client, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Tools:
//
//	computer       one canonical action (kind plus the fields of
//	               actions.Action's JSON) or a batch of them ("actions");
//	               answered with the fresh screenshot as image content and a
//	               text note naming its frame
//	navigate       open a URL the Policy allows
//	open_session   a new display (its own browser context); returns its id
//	close_session  close one
//	list_sessions  the open sessions
//
// Every connection has a default session, opened at its first call and
// closed when the connection ends; calls may name another session instead.
// Calls go through harness.Executor, the one per-action path the harness
// loop uses too: validation, the Policy, secret fields, mapping with the
// frame the client saw, the Approver, the fresh screenshot and the record.
// A refused or failed call is a tool result with isError set and the
// reason in words, still with a fresh screenshot.
//
// Server.Run serves one connection over a transport (stdio); Server.Handler
// serves streamable HTTP. Server.Close closes every display.
package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// ErrNoSession marks a call that names a session that is not open.
var ErrNoSession = errors.New("no such session")

// ErrTooMany marks an open_session beyond Config.MaxSessions.
var ErrTooMany = errors.New("too many open sessions")

// A Display is what a session drives; screen/cdp's Display is one.
type Display interface {
	harness.Display
	Close(ctx context.Context) error
}

// Config configures a Server.
type Config struct {
	// NewDisplay opens a display for a new session; required. The
	// session then opens its start page on it.
	NewDisplay func(ctx context.Context) (Display, error)
	// StartURL is opened in every new session that names none (a
	// client's choice has passed the Policy already).
	StartURL string

	Policy   actions.Policy        // the zero Policy allows screenshots only
	Limits   actions.Limits        // zero: actions' defaults
	Capture  screen.CaptureOptions // the screenshot sent back; zero Size: the viewport's CSS size
	Approver harness.Approver      // nil: actions run once the Policy allows them
	// Attach, when set, connects each new session to what supervises it
	// (spotter serve; spotter mcp's approvals and --out): its own Approver
	// (an approvals.Gate with the display to hit-test) instead of
	// Approver, a trace (of every call, action, result and screenshot),
	// and the events of its calls for the session's history. It is
	// called once the display is open, before the start page is. id is
	// the session's id in this server, c the connection that opens it.
	Attach func(ctx context.Context, id string, d Display, c Conn) (Attached, error)
	// NewID names each new session; default s1, s2, ... A server that
	// keeps sessions across restarts and replicas (spotter serve) gives
	// ids unique among all of them: a resumed session keeps its id.
	NewID func() string

	// IdleTimeout closes a session nobody has called for this long (its
	// display released, its record closed), and a streamable HTTP
	// connection that has sent no request for this long, with the
	// sessions it opened. Zero: DefaultIdleTimeout; negative: never.
	IdleTimeout time.Duration

	// ConnectionPrefix starts the id of every streamable HTTP connection
	// (Mcp-Session-Id) this server makes, before a random part without
	// dots: replicas of spotter serve put their own id and a dot there,
	// so that any replica knows which one holds a client's connection.
	ConnectionPrefix string

	MaxSessions int          // default 8
	Name        string       // the server's name in the handshake; default "spotter"
	Version     string       // default "dev"
	Logger      *slog.Logger // nil: slog.Default()
}

// DefaultIdleTimeout is Config.IdleTimeout's default.
const DefaultIdleTimeout = 15 * time.Minute

// Attached is what a supervising server gives a session. Every field is
// optional.
type Attached struct {
	Approver harness.Approver
	Trace    *trace.Writer
	OnEvent  func(trace.Event)
	// Close is called when the session closes, after its display.
	Close func(ctx context.Context) error
}

// Server is an MCP server over Spotter displays. It is safe for concurrent
// use. The caller must call Close.
type Server struct {
	cfg Config
	log *slog.Logger
	srv *sdk.Server

	mu       sync.Mutex
	seq      int
	sessions map[string]*session
	defaults map[*sdk.ServerSession]string // connection -> its default session
	watched  map[*sdk.ServerSession]bool   // connections whose end closes their sessions
	adopted  map[string]*adoptedConn       // connections of resumed sessions, by id (resume.go)
	parked   map[string]*parked            // calls in progress, by id (ask.go)
	closed   bool
	// wg counts the server's goroutines: those that close default
	// sessions when a connection ends, and parked calls.
	wg sync.WaitGroup
	// ctx ends when Close begins: those goroutines return.
	ctx    context.Context
	cancel context.CancelFunc
}

type session struct {
	id       string
	exec     *harness.Executor
	disp     Display
	url      string // the start URL
	attached Attached
	// owner is the connection that opened the session: when it ends
	// (the client's DELETE, a dropped stdio pipe, its idle timeout), the
	// session closes. Nil for a session of no connection (tests), and
	// for a resumed one until its client comes back (resume.go).
	owner *sdk.ServerSession
	// conn is the owner's id (its Mcp-Session-Id), "" over stdio.
	conn string
	// note is said with the result of the session's next call (why its
	// display was opened anew), under Server.mu.
	note string
	// client is the MCP client that opened the session, from its
	// connection's bearer token (Client): a connection of another client
	// neither sees nor drives it. "" for a connection without one (stdio,
	// spotter serve's server token), which sees every session.
	client string
	// used is when a call last named the session, busy how many of its
	// calls are in progress (a call waiting for an approval is busy),
	// under Server.mu: an idle session is closed.
	used time.Time
	busy int
}

// close closes the session's display, then what attached it.
func (se *session) close(ctx context.Context) error {
	err := se.disp.Close(ctx)
	if se.attached.Trace != nil {
		err = errors.Join(err, se.attached.Trace.Close())
	}
	if se.attached.Close != nil {
		err = errors.Join(err, se.attached.Close(ctx))
	}
	return err
}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.NewDisplay == nil {
		return nil, errors.New("mcp: Config needs NewDisplay")
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 8
	}
	if cfg.Name == "" {
		cfg.Name = "spotter"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	s := &Server{cfg: cfg, log: cfg.Logger, sessions: map[string]*session{}, defaults: map[*sdk.ServerSession]string{},
		watched: map[*sdk.ServerSession]bool{}, adopted: map[string]*adoptedConn{}, parked: map[string]*parked{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.IdleTimeout > 0 {
		s.wg.Go(s.reap)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: cfg.Name, Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "Spotter drives a real browser. Take a screenshot with the computer tool (kind screenshot), " +
			"then act in the pixels of that image; every call answers with a fresh screenshot. " +
			"Pass frame_id to say which screenshot your coordinates refer to.",
		Logger: cfg.Logger,
		GetSessionID: func() string {
			return cfg.ConnectionPrefix + rand.Text()
		},
	})
	s.addTools()
	return s, nil
}

// MCP returns the SDK server, for transports this package does not wrap.
func (s *Server) MCP() *sdk.Server { return s.srv }

// Run serves one connection over t (such as &sdk.StdioTransport{}) until
// the client disconnects or ctx is done.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.srv.Run(ctx, t)
}

// reap closes the sessions nobody has called for IdleTimeout, until the
// server closes.
func (s *Server) reap() {
	t := time.NewTicker(max(s.cfg.IdleTimeout/8, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			var idle []string
			for id, se := range s.sessions {
				if se != nil && se.busy == 0 && now.Sub(se.used) >= s.cfg.IdleTimeout {
					idle = append(idle, id)
				}
			}
			s.mu.Unlock()
			for _, id := range idle {
				s.log.Info("session idle: closing it", "session", id, "idle_timeout", s.cfg.IdleTimeout)
				s.closeSession(s.ctx, id)
			}
		}
	}
}

// watch closes the sessions conn opened once conn ends. It runs under mu.
func (s *Server) watch(conn *sdk.ServerSession) {
	if conn == nil || s.watched[conn] {
		return
	}
	s.watched[conn] = true
	s.wg.Go(func() {
		done := make(chan struct{})
		go func() { conn.Wait(); close(done) }() //nolint:errcheck // ends with the connection, which Close ends too
		select {
		case <-done:
		case <-s.ctx.Done():
			conn.Close()
			<-done
			return
		}
		s.mu.Lock()
		delete(s.watched, conn)
		delete(s.defaults, conn)
		if a := s.adopted[conn.ID()]; a != nil {
			a.mu.Lock()
			if a.ss == conn {
				if a.timer != nil {
					a.timer.Stop()
				}
				delete(s.adopted, a.id)
			}
			a.mu.Unlock()
		}
		ids := s.idsOf(func(se *session) bool { return se.owner == conn })
		s.mu.Unlock()
		for _, id := range ids {
			s.closeSession(context.Background(), id)
		}
	})
}

// idsOf lists the open sessions for which match holds. It runs under mu.
func (s *Server) idsOf(match func(*session) bool) []string {
	var ids []string
	for id, se := range s.sessions {
		if se != nil && match(se) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Close closes every session's display and waits for the server's
// goroutines. Later calls fail.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	all := make([]*session, 0, len(s.sessions))
	for _, se := range s.sessions {
		all = append(all, se)
	}
	clear(s.sessions)
	s.mu.Unlock()
	s.wg.Wait()
	var errs []error
	for _, se := range all {
		errs = append(errs, se.close(context.WithoutCancel(ctx)))
	}
	return errors.Join(errs...)
}

// ClientPrefix starts the auth.TokenInfo.UserID of a request whose
// token names an MCP client (ClientPrefix + the client's name): a server
// behind such tokens (spotter serve's /mcp) confines each client to the
// sessions it opened. A request without a TokenInfo, or with another
// UserID, is of no client and sees every session.
const ClientPrefix = "mcp-client/"

// clientOf returns the MCP client a request's token names, or "".
func clientOf(extra *sdk.RequestExtra) string {
	if extra == nil || extra.TokenInfo == nil || !strings.HasPrefix(extra.TokenInfo.UserID, ClientPrefix) {
		return ""
	}
	return extra.TokenInfo.UserID
}

// open starts a session of conn (a connection of client) with its own
// display; def says it is to be the connection's default session.
func (s *Server) open(ctx context.Context, conn *sdk.ServerSession, client, start string, def bool) (*session, error) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, errors.New("the server is closed")
	case len(s.sessions) >= s.cfg.MaxSessions:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w (%d); close one first", ErrTooMany, s.cfg.MaxSessions)
	}
	var id string
	if s.cfg.NewID != nil {
		id = s.cfg.NewID()
	} else {
		s.seq++
		id = fmt.Sprintf("s%d", s.seq)
	}
	if _, taken := s.sessions[id]; taken || id == "" {
		s.mu.Unlock()
		return nil, fmt.Errorf("session id %q is taken", id)
	}
	s.sessions[id] = nil // reserve the slot while the display opens
	s.mu.Unlock()

	c := Conn{Client: client, Default: def}
	if conn != nil {
		c.ID = conn.ID()
		if ip := conn.InitializeParams(); ip != nil {
			c.Init, _ = json.Marshal(ip)
		}
	}
	se, err := s.newSession(ctx, id, start, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || s.closed {
		delete(s.sessions, id)
		if err == nil {
			se.close(context.WithoutCancel(ctx))
			err = errors.New("the server is closed")
		}
		return nil, err
	}
	se.owner, se.conn, se.client, se.used = conn, c.ID, client, time.Now()
	s.sessions[id] = se
	s.watch(conn)
	s.log.InfoContext(ctx, "session opened", "session", id)
	return se, nil
}

func (s *Server) newSession(ctx context.Context, id, start string, c Conn) (*session, error) {
	if start == "" {
		start = s.cfg.StartURL
	}
	return s.startSession(ctx, id, start, 0, func(ctx context.Context, d Display) (Attached, error) {
		if s.cfg.Attach == nil {
			return Attached{Approver: s.cfg.Approver}, nil
		}
		return s.cfg.Attach(ctx, id, d, c)
	})
}

// startSession opens a display for session id at page and attaches it
// (as soon as it is open, so that what the page does, the egress it asks
// for, reaches what supervises it); the session's frames are numbered
// after frameSeq.
func (s *Server) startSession(ctx context.Context, id, page string, frameSeq int, attach func(context.Context, Display) (Attached, error)) (*session, error) {
	d, err := s.cfg.NewDisplay(ctx)
	if err != nil {
		return nil, fmt.Errorf("open a display: %w", err)
	}
	at, err := attach(ctx, d)
	if err != nil {
		d.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("attach session %s: %w", id, err)
	}
	se := &session{id: id, disp: d, url: page, attached: at}
	if page != "" {
		if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: page}}); err != nil {
			se.close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("open %s: %w", page, err)
		}
	}
	// The executor hit-tests and resolves element references on the
	// display itself; its screenshots are numbered by the session.
	cfg := harness.ExecutorConfig{Display: &numbered{Display: d, seq: frameSeq}, Policy: s.cfg.Policy, Limits: s.cfg.Limits,
		Capture: s.cfg.Capture, Approver: at.Approver, Trace: at.Trace, OnEvent: at.OnEvent, Logger: s.log}
	cfg.Inspector, _ = d.(harness.Inspector)
	cfg.Referencer, _ = d.(harness.Referencer)
	se.exec, err = harness.NewExecutor(cfg)
	if err != nil {
		se.close(context.WithoutCancel(ctx))
		return nil, err
	}
	// The first screenshot's geometry is the one every screenshot of the
	// session has: a client may act in its pixels before it has asked for
	// one (a one-shot call from a command line).
	if _, err := se.screenshot(ctx); err != nil {
		se.close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("the first screenshot: %w", err)
	}
	return se, nil
}

// screenshot captures the session's display and records the frame, so
// that calls (and the approvals they raise) can refer to it.
func (se *session) screenshot(ctx context.Context) (screen.Shot, error) {
	shot, name, err := se.exec.Screenshot(ctx, harness.ActorClient)
	if err != nil {
		return shot, err
	}
	se.exec.Record(trace.Event{Type: trace.TypeNote, Text: "screenshot " + shot.Frame.ID, Actor: string(harness.ActorClient),
		FrameID: shot.Frame.ID, Frame: shot.Frame, Shot: name, Page: shot.Log})
	shot.Log = screen.PageLog{}
	return shot, nil
}

// closeSession closes the session id.
func (s *Server) closeSession(ctx context.Context, id string) error {
	return s.closeSessionOf(ctx, "", id)
}

// closeSessionOf closes the session id if client ("": any) opened it.
func (s *Server) closeSessionOf(ctx context.Context, client, id string) error {
	s.mu.Lock()
	se, ok := s.sessions[id]
	if ok && se != nil && client != "" && se.client != client {
		ok = false
	}
	if ok && se != nil {
		delete(s.sessions, id)
		for c, d := range s.defaults {
			if d == id {
				delete(s.defaults, c)
			}
		}
		s.forgetAdopted(se.conn)
		for _, p := range s.parked {
			if p.session == id {
				p.cancel(fmt.Errorf("session %s closed", id)) // a question it waits on is withdrawn
			}
		}
	}
	s.mu.Unlock()
	if !ok || se == nil {
		return fmt.Errorf("%w %q", ErrNoSession, id)
	}
	s.log.InfoContext(ctx, "session closed", "session", id)
	if err := se.close(context.WithoutCancel(ctx)); err != nil {
		// The reasons hold the server's paths: the log has them.
		s.log.ErrorContext(ctx, "close session", "session", id, "err", err)
		return fmt.Errorf("session %s is closed, but not all of it closed cleanly; the server's log says why", id)
	}
	return nil
}

// lookup returns the session a call of client names, or the connection's
// default session, opening it at first use. Either is marked used now. A
// session of another client is not found.
func (s *Server) lookup(ctx context.Context, conn *sdk.ServerSession, client, id string) (*session, error) {
	s.mu.Lock()
	if id == "" {
		id = s.defaults[conn]
	}
	if id != "" {
		se, ok := s.sessions[id]
		if ok && se != nil && client != "" && se.client != client {
			ok = false // another client's: as if it did not exist
		}
		if ok && se != nil {
			se.used = time.Now()
		}
		s.mu.Unlock()
		if !ok || se == nil {
			return nil, fmt.Errorf("%w %q", ErrNoSession, id)
		}
		return se, nil
	}
	s.mu.Unlock()
	se, err := s.open(ctx, conn, client, "", true)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("the server is closed")
	}
	if other, ok := s.sessions[s.defaults[conn]]; ok && other != nil {
		// A concurrent first call of this connection opened one already.
		s.mu.Unlock()
		s.closeSession(ctx, se.id)
		return other, nil
	}
	s.defaults[conn] = se.id
	s.mu.Unlock()
	return se, nil
}

// list returns the sessions client sees: its own, or all for "".
func (s *Server) list(client string) []sessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sessionInfo
	for id, se := range s.sessions {
		if se == nil || client != "" && se.client != client {
			continue
		}
		info := sessionInfo{ID: id, StartURL: se.url}
		for _, d := range s.defaults {
			info.Default = info.Default || d == id
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b sessionInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

type sessionInfo struct {
	ID       string `json:"id"`
	StartURL string `json:"start_url,omitempty"`
	Default  bool   `json:"default,omitempty"` // some connection's default session
}

// errorResult is a tool failure the client's model should see.
func errorResult(err error) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "error: " + err.Error()}}}
}

func textResult(v any) *sdk.CallToolResult {
	b, _ := json.Marshal(v)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
}
