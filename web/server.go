// Package web is the HTTP side of `spotter serve`: the session protocol
// (PUT /session, POST /session/:id, answered with SSE streams), the
// approvals and audit routes, the executor API for clients with their own
// agent loop, takeover, and the approval panel's embedded assets. The
// contract is docs/API.md.
//
// Every route but the login page, the panel's static assets and /healthz
// needs credentials: a bearer token, or the cookie POST /login sets, with a
// CSRF token on state-changing requests. Cross-site requests are refused.
// web never performs actions itself: sessions (package internal/session) run the
// harness loop, and decisions on approvals come only from authenticated
// requests.
package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/mcp"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/store"
	"github.com/spotter-harness/spotter/web/panel"
)

// Config configures a Server. Zero values are documented defaults.
type Config struct {
	Addr    string // default "127.0.0.1:8080"
	DataDir string // required: the database (SQLite) and the sessions' files
	// DB is the store's DSN: "" is DataDir/spotter.db (SQLite), or a
	// postgres:// URL.
	DB string
	// Token is the credential of API clients and the panel's login; ""
	// makes a random one (Server.Token).
	Token string
	// Sandboxes, when set, runs each session's browser (agent, executor
	// and MCP sessions alike) in a sandbox of its own, with
	// wiring.OpenDisplay, whose only way out is an egress proxy allowing
	// the session's policy hosts and its start URL's host
	// (wiring.EgressFor); a desktop session's desktop runs in a containerd
	// sandbox the same way. Nil means a Chromium process per session on the
	// host, whose requests all go through an egress proxy on the host's
	// loopback that lets through the public internet but no internal
	// address (loopback, private, link-local, metadata) the policy does
	// not name exactly (wiring.OpenWeb). Either way the browser does not
	// reach the server's own address unless the policy names it. The
	// Server does not close them. NewDisplay, when set, wins.
	Sandboxes *wiring.Sandboxes
	// Shared, when set, holds the browsers that sessions' chromium
	// displays on the host share, each a browser context of its own
	// behind its own egress proxy (wiring.DisplayRequest.Shared); nil: a
	// browser per session. Not with containerd Sandboxes. The Server does
	// not close it.
	Shared  *cdp.Pool
	Browser string // Chromium executable; "" looks it up
	// Getenv supplies provider keys and base URLs (nil: none).
	Getenv func(string) string
	Logger *slog.Logger // nil: slog.Default()
	// NewModel builds a session's model; nil means the provider adapters,
	// configured from Getenv. image is the size of the screenshots the
	// model is sent; tools are the session's application-side tools.
	NewModel func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error)
	// Displays are the display backends (wiring.Backends) that agent and
	// executor sessions may ask for; nil means chromium only. A desktop
	// runs the command its client names (on the host, unless Sandboxes
	// are containerd), and a vnc display makes the server connect where
	// its client says, with the password of the server's environment
	// variable it names, of which only SPOTTER_VNC_* ones are read: allow
	// them for clients trusted that far. MCP's display (MCPConfig.Display)
	// is the operator's and is not bound by this.
	Displays []string
	// NewDisplay opens a session's display; nil means the backend the
	// session's spec names, through wiring.OpenDisplay (see Sandboxes).
	NewDisplay func(ctx context.Context, d session.DisplaySpec) (session.Display, error)
	// ApprovalTimeout is how long an approval waits for a human before it
	// counts as a denial, unless a session's rules say otherwise; default
	// approvals.DefaultTimeout.
	ApprovalTimeout time.Duration
	// Version is the build's version, which /mcp reports to clients;
	// empty: "dev".
	Version string
	// Rules are the approval rules of sessions whose spec brings none
	// (spotter serve --rules); nil: approvals.Default(). MCP.Rules are the
	// MCP sessions'.
	Rules *approvals.Rules
	// Store, when set, is used instead of opening DB; the Server does not
	// close it.
	Store store.Store
	// MCP configures the MCP server mounted at /mcp.
	MCP MCPConfig
	// AllowBaseURLs are the model base URLs, besides each provider's
	// official endpoint and the base URLs of Getenv (ANTHROPIC_BASE_URL,
	// OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL), that the server sends its
	// own provider keys to. An entry allows its origin (scheme, host and
	// port) under its path. A session that names any other base URL must
	// bring its own key (the X-Spotter-Provider-Key header of PUT
	// /session); plain http is refused there unless the host is loopback.
	AllowBaseURLs []string
	// MaxSessions bounds the agent and executor sessions with a browser
	// open at once (session.Config.MaxSessions): one past it is refused
	// with 503 and Retry-After. Zero means session.DefaultMaxSessions(),
	// from the machine's memory; negative means no bound.
	MaxSessions int
	// HTTP bounds the connections Serve accepts.
	HTTP HTTPConfig
	// Cluster, with Cluster.Advertise set, makes this server one replica
	// of several that share its store (PostgreSQL): see ClusterConfig.
	Cluster ClusterConfig
	// Retention deletes finished sessions, whole, past an age or a total
	// size of their files (spotter serve --retain); the zero Retention
	// deletes nothing.
	Retention Retention
	// BrowserCheck is how often /readyz's check starts a browser (opened
	// like a session's, on about:blank) when no session has started one
	// since; default DefaultBrowserCheck, negative: never (the check then
	// always passes).
	BrowserCheck time.Duration
}

// HTTPConfig bounds the connections of Serve. Zero values are the
// defaults. The write bound applies to Handler too.
type HTTPConfig struct {
	// ReadHeaderTimeout bounds the wait for a request's headers on a new
	// connection; default 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, headers and body;
	// default 60s. It ends with the body: net/http lifts it once the body
	// is read, so it never cuts the answer.
	ReadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next
	// request; default 60s.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write of an answer (an SSE event, a
	// flush), not the whole answer: event streams and long polls last as
	// long as they need, and a client that stops reading is cut off.
	// Default 30s.
	WriteTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers; default 64 KiB.
	MaxHeaderBytes int
}

// Defaults of HTTPConfig.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
)

func (h HTTPConfig) withDefaults() HTTPConfig {
	h.ReadHeaderTimeout = cmp.Or(h.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	h.ReadTimeout = cmp.Or(h.ReadTimeout, DefaultReadTimeout)
	h.IdleTimeout = cmp.Or(h.IdleTimeout, DefaultIdleTimeout)
	h.WriteTimeout = cmp.Or(h.WriteTimeout, DefaultWriteTimeout)
	h.MaxHeaderBytes = cmp.Or(h.MaxHeaderBytes, DefaultMaxHeaderBytes)
	return h
}

// MCPConfig configures the MCP server (package mcp, streamable HTTP) that
// a Server mounts at /mcp, behind the same credentials as every route.
// Each MCP session gets its own display and a session of kind "mcp"
// whose approvals wait in the same queue as the others: the panel lists
// them, POST /approvals/:id decides them, and the MCP call waits for the
// decision.
type MCPConfig struct {
	StartURL string // opened in every MCP session; "" opens none
	// Policy is what MCP calls may do; nil means actions.Standard(), with
	// StartURL's host as the only navigation host.
	Policy *actions.Policy
	// Rules decide what needs a human; the zero Rules are
	// approvals.Default().
	Rules       approvals.Rules
	Display     session.DisplaySpec // zero: 1280x800 at DPR 1
	Image       screen.Size         // the screenshot sent back; zero: the viewport's CSS size
	MaxSessions int                 // default 8
	// IdleTimeout closes an MCP session nobody has called for this
	// long, and a client connection that sent nothing for this long
	// (mcp.Config.IdleTimeout): zero mcp.DefaultIdleTimeout, negative
	// never.
	IdleTimeout time.Duration
}

// MaxBody is the largest request body the server reads.
const MaxBody = 1 << 20

// Server is a running `spotter serve`: its store, its sessions and its
// HTTP handler. The caller must call Close.
type Server struct {
	cfg    Config
	log    *slog.Logger
	st     store.Store
	ownSt  bool
	mgr    *session.Manager
	token  string
	engine *gin.Engine
	// handler is what Handler and Serve serve: engine in each request's
	// span (traced), wrapped by testHandler when the package's tests set it.
	handler http.Handler
	assets  fs.FS
	cop     *http.CrossOriginProtection
	limits  limiter // rate limits (ratelimit.go)

	mcp  *mcp.Server
	mcpH http.Handler // mcp's streamable HTTP handler, which holds the MCP sessions
	// mcpRules and mcpHosts are the MCP sessions' approval rules and
	// policy hosts, for the gate of each session's display.
	mcpRules approvals.Rules
	mcpHosts []string
	// mcpHandover is set once the MCP sessions are closing because this
	// server stops (Close, a lost lease): they are handed over, not
	// ended, so their records stay live for a restart or an adoption.
	mcpHandover atomic.Bool
	// mcpAuthH is mcpH behind the bearer check that names the MCP client
	// of the request's token (mcp.Server confines each client to its own
	// sessions).
	mcpAuthH http.Handler

	allowed []*url.URL // Config.AllowBaseURLs (models.go)

	selfMu sync.Mutex
	self   []netip.AddrPort // the addresses Serve listens on, which sessions' browsers may not reach

	browser  *browserCheck // /readyz's browser check (cluster_health.go)
	draining atomic.Bool   // Drain was called: no new sessions
	closing  atomic.Bool   // Close was called: sessions are being handed over
	cluster  *cluster      // nil for a server on its own (cluster.go)
	retainer *retainer     // nil without Config.Retention (retention.go)
	started  atomic.Bool   // Start was called
	bgMu     sync.Mutex    // guards bgStop
	bgStop   context.CancelFunc
	bg       sync.WaitGroup // the browser check
}

// New opens the store and builds the sessions' manager and the handler; it
// starts nothing: Start restores the stored sessions and starts the
// server's background work. ctx bounds opening the store only. The caller
// must call Close, whether or not it called Start.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("web: Config.DataDir is required")
	}
	if cfg.Shared != nil && cfg.Sandboxes != nil && cfg.Sandboxes.Backend() != isolate.Local {
		return nil, fmt.Errorf("web: shared browsers run on the host; sessions in %s sandboxes run their own", cfg.Sandboxes.Backend())
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("web: data directory: %w", err)
	}
	cfg.HTTP = cfg.HTTP.withDefaults()
	allowed, err := parseBaseURLs(cfg.AllowBaseURLs)
	if err != nil {
		return nil, fmt.Errorf("web: AllowBaseURLs: %w", err)
	}
	s := &Server{cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()), token: cfg.Token, st: cfg.Store, allowed: allowed}
	if s.token == "" {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		s.token = hex.EncodeToString(b[:])
	}
	if s.st == nil {
		dsn := cmp.Or(cfg.DB, filepath.Join(cfg.DataDir, "spotter.db"))
		st, err := store.Open(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("web: %w", err)
		}
		s.st, s.ownSt = st, true
	}
	newModel := cfg.NewModel
	if newModel == nil {
		getenv := cfg.Getenv
		if getenv == nil {
			getenv = func(string) string { return "" }
		}
		newModel = func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			env, err := s.modelEnv(ctx, m, getenv)
			if err != nil {
				return nil, err
			}
			return defaultModel(m, image, tools, env, s.log)
		}
	}
	// An agent or executor session's display is relaunched by the
	// session, at its last page, a bounded number of times (session's
	// guard); an MCP session's display starts itself anew.
	newDisplay := s.opener(0)
	s.browser = newBrowserCheck(cmp.Or(cfg.BrowserCheck, DefaultBrowserCheck), probeBrowser(newDisplay))
	newDisplay = s.checkedOpener(newDisplay)
	sessionDisplay, err := allowedDisplays(cfg.Displays, s.checkedOpener(s.opener(-1)))
	if err != nil {
		return nil, err
	}
	mst := s.st
	if cfg.Cluster.Advertise != "" {
		if s.cluster, err = newCluster(s, cfg.Cluster); err != nil {
			s.closeStore()
			return nil, err
		}
		mst = ownedStore{Store: s.st, c: s.cluster}
	}
	mgr, err := session.New(session.Config{
		Store: mst,
		Dir:   filepath.Join(cfg.DataDir, "sessions"),
		NewModel: func(ctx context.Context, sp session.Spec, image screen.Size) (harness.Model, error) {
			return newModel(ctx, sp.Model, image, sp.Tools)
		},
		NewDisplay:      sessionDisplay,
		ApprovalTimeout: cfg.ApprovalTimeout,
		Rules:           cfg.Rules,
		MaxSessions:     cfg.MaxSessions,
		ResumeRemote:    s.resumeMCP,
		Logger:          s.log,
	})
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.mgr = mgr
	if s.mcp, err = s.newMCP(newDisplay); err != nil {
		_ = mgr.Close(ctx)
		s.closeStore()
		return nil, err
	}
	s.mcpH = s.mcp.Handler()
	s.mcpAuthH = auth.RequireBearerToken(func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if client, ok := s.mcpClient(tok); ok {
			return &auth.TokenInfo{UserID: mcp.ClientPrefix + client}, nil
		}
		return &auth.TokenInfo{}, nil // authenticate let it through: the server token sees every session
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(s.mcpH)
	if cfg.Retention.Enabled() {
		s.retainer = newRetainer(s, cfg.Retention)
	}
	s.assets = panel.FS
	s.engine = s.routes()
	s.handler = traced(s.engine)
	if testHandler != nil {
		s.handler = testHandler(s, s.handler)
	}
	return s, nil
}

// Start restores the stored sessions, resuming those that were cut short
// and relaunching their displays (a replica of a cluster registers itself
// instead, and its loop adopts its share of the sessions nobody owns), and
// starts the readiness check's browser probe, which runs until Close. ctx
// bounds the restore only. A session that cannot be restored is logged;
// the others run. Start may be called once.
func (s *Server) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("web: Start called twice")
	}
	if s.cluster != nil {
		if err := s.cluster.start(ctx); err != nil {
			return err
		}
	} else if err := s.mgr.Restore(ctx); err != nil {
		s.log.Error("restore sessions", "err", err)
	}
	bctx, stop := context.WithCancel(context.Background())
	s.bgMu.Lock()
	s.bgStop = stop
	s.bgMu.Unlock()
	s.bg.Go(func() {
		s.browser.run(bctx, func(msg string, args ...any) { s.log.Warn(msg, args...) })
	})
	if s.retainer != nil {
		s.bg.Go(func() { s.retainer.run(bctx) })
	}
	return nil
}

// Replica returns this server's replica id, or "" for a server on its
// own.
func (s *Server) Replica() string {
	if s.cluster == nil {
		return ""
	}
	return s.cluster.id
}

// Token returns the credential clients must present.
func (s *Server) Token() string { return s.token }

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// testHandler, when the package's tests set it (openapi_test.go), wraps
// the handler of every Server they make: it checks each request and
// answer against docs/openapi.yaml.
var testHandler func(*Server, http.Handler) http.Handler

// ListenAndServe listens on Config.Addr and serves until ctx is done; see
// Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", cmp.Or(s.cfg.Addr, "127.0.0.1:8080"))
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then shuts the HTTP server down
// (open streams end with ctx; other requests get 10 seconds). It does not
// close the sessions: Close does. Sessions' browsers cannot reach ln's
// address unless their policy names it. A replica that lost its lease
// returns ErrLeaseLost at once (see ClusterConfig.LeaseTTL).
//
// A connection must send its request's headers within ReadHeaderTimeout,
// the rest of the request within ReadTimeout, and a kept-alive one its
// next request within IdleTimeout. There is no whole-answer write
// timeout, which would cut event streams and long polls: each write is
// bounded instead (WriteTimeout), by the handler.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.listening(ln.Addr())
	h := s.cfg.HTTP
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: h.ReadHeaderTimeout, ReadTimeout: h.ReadTimeout,
		IdleTimeout: h.IdleTimeout, MaxHeaderBytes: h.MaxHeaderBytes,
		BaseContext: func(net.Listener) context.Context { return ctx }} // streams end with ctx
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var lost <-chan struct{}
	if s.cluster != nil {
		lost = s.cluster.lost
	}
	var why error
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	case <-lost:
		why = fmt.Errorf("%w: %v", ErrLeaseLost, s.cluster.lostErr.Load())
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return errors.Join(why, err)
}

// Close stops every session and closes their displays and the store. A
// server on its own resumes its sessions at its next start; a replica
// hands them over to the others, which adopt them at once. Requests for
// sessions that arrive meanwhile are answered 503 with Retry-After.
func (s *Server) Close(ctx context.Context) error {
	s.closing.Store(true)
	s.bgMu.Lock()
	if s.bgStop != nil {
		s.bgStop()
	}
	s.bgMu.Unlock()
	s.bg.Wait()
	if s.cluster != nil {
		s.cluster.close()
	}
	merr := s.handOverMCP(ctx)
	err := s.mgr.Close(ctx)
	var rerr error
	if s.cluster != nil {
		// Bounded: with the database gone, the others adopt the sessions
		// once this replica's lease lapses instead.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		rerr = s.cluster.release(rctx)
		cancel()
	}
	return errors.Join(merr, err, rerr, s.closeStore())
}

// opener returns how sessions open their displays: Config.NewDisplay, a
// sandboxed browser (Config.Sandboxes), or a browser on the host behind
// an egress proxy that refuses internal addresses the session's policy
// does not name (wiring.OpenWeb). Neither kind of browser reaches the
// server's own address unless the policy names it. maxRestarts is
// wiring.DisplayRequest.MaxRestarts: -1 for a display whose session
// relaunches it itself.
func (s *Server) opener(maxRestarts int) func(context.Context, session.Spec) (session.Display, error) {
	cfg := s.cfg
	if cfg.NewDisplay != nil {
		return func(ctx context.Context, sp session.Spec) (session.Display, error) {
			return cfg.NewDisplay(ctx, sp.Display)
		}
	}
	return func(ctx context.Context, sp session.Spec) (session.Display, error) {
		var hosts []string
		if sp.Policy != nil {
			hosts = sp.Policy.Hosts
		}
		req := wiring.DisplayRequest{Display: sp.Display.Spec(), Browser: cfg.Browser, MaxRestarts: maxRestarts,
			StartURL: sp.StartURL, Sandboxes: cfg.Sandboxes, Shared: cfg.Shared, Getenv: cfg.Getenv, Logger: s.log}
		if cfg.Sandboxes != nil {
			req.Egress = wiring.EgressFor(hosts, sp.StartURL)
			req.Egress.Deny = s.selfDeny(req.Egress.Allow)
		} else {
			p := wiring.OpenWeb(hosts, sp.StartURL)
			p.Deny = s.selfDeny(p.Allow)
			req.HostEgress = &p
		}
		d, err := wiring.OpenDisplay(ctx, req)
		if err != nil {
			if errors.Is(err, wiring.ErrSpec) {
				// The spec was checked when the session was made; what is
				// left is the outside world (a VNC server's screen, a
				// password variable the operator has not set).
				return nil, fmt.Errorf("%w: %s", session.ErrBadRequest, strings.ReplaceAll(err.Error(), wiring.ErrSpec.Error()+": ", ""))
			}
			if errors.Is(err, wiring.ErrConnect) {
				// Where the client pointed the display; the cause, which
				// may name this host's files, goes to the log.
				s.log.WarnContext(ctx, "open a session's display", "err", err)
				return nil, fmt.Errorf("%w: the display server the session names (display.address or display.ws_endpoint) did not answer",
					session.ErrBadRequest)
			}
			return nil, err
		}
		return d, nil
	}
}

// SessionPasswordPrefix starts the name of every environment variable a
// session's vnc display may read its password from.
const SessionPasswordPrefix = "SPOTTER_VNC_"

// allowedDisplays returns open, refusing the sessions whose display
// backend is not one of allowed (nil: chromium only) and vnc passwords
// from variables outside SessionPasswordPrefix, with ErrBadRequest.
func allowedDisplays(allowed []string, open func(context.Context, session.Spec) (session.Display, error)) (func(context.Context, session.Spec) (session.Display, error), error) {
	if allowed == nil {
		allowed = []string{wiring.Chromium}
	}
	for _, b := range allowed {
		if !slices.Contains(wiring.Backends, b) {
			return nil, fmt.Errorf("web: Displays: %q is not a display backend (want %s)", b, strings.Join(wiring.Backends, ", "))
		}
	}
	return func(ctx context.Context, sp session.Spec) (session.Display, error) {
		b := cmp.Or(sp.Display.Backend, wiring.Chromium)
		if !slices.Contains(allowed, b) {
			return nil, fmt.Errorf("%w: display.backend %s is not enabled on this server (it allows %s; the operator enables others with spotter serve --displays)",
				session.ErrBadRequest, b, strings.Join(allowed, ", "))
		}
		if pe := sp.Display.PasswordEnv; pe != "" && !strings.HasPrefix(pe, SessionPasswordPrefix) {
			return nil, fmt.Errorf("%w: display.password_env %s: a session may read its VNC password only from a variable named %s...",
				session.ErrBadRequest, pe, SessionPasswordPrefix)
		}
		return open(ctx, sp)
	}, nil
}

// listening records an address Serve listens on.
func (s *Server) listening(a net.Addr) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return // not TCP: nothing a browser could reach
	}
	s.selfMu.Lock()
	s.self = append(s.self, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	s.selfMu.Unlock()
}

// selfDeny returns egress Deny entries for the public addresses the
// server listens on (every interface's, for an unspecified address),
// leaving out those allow names exactly. Internal addresses (loopback,
// private, link-local) need no entry: the proxy refuses them unless an
// Allow entry names them exactly.
func (s *Server) selfDeny(allow []string) []string {
	s.selfMu.Lock()
	self := slices.Clone(s.self)
	s.selfMu.Unlock()
	var addrs []netip.AddrPort
	for _, ap := range self {
		if !ap.Addr().IsUnspecified() {
			addrs = append(addrs, ap)
			continue
		}
		ifs, err := net.InterfaceAddrs()
		if err != nil {
			s.log.Warn("list interface addresses", "err", err)
			continue
		}
		for _, ia := range ifs {
			if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().Zone() == "" {
				addrs = append(addrs, netip.AddrPortFrom(p.Addr().Unmap(), ap.Port()))
			}
		}
	}
	var deny []string
	for _, ap := range addrs {
		if egress.Internal(ap.Addr()) {
			continue
		}
		e := ap.String()
		if !slices.Contains(allow, e) && !slices.Contains(deny, e) {
			deny = append(deny, e)
		}
	}
	return deny
}

// newMCP builds the MCP server mounted at /mcp: each of its sessions has a
// display of its own and an approvals.Gate on the sessions' queue.
func (s *Server) newMCP(newDisplay func(context.Context, session.Spec) (session.Display, error)) (*mcp.Server, error) {
	mc := s.cfg.MCP
	ds := mc.Display
	if ds.Width == 0 && ds.Height == 0 {
		ds.Width, ds.Height = 1280, 800
	}
	ds.DPR = cmp.Or(ds.DPR, 1)
	ws := ds.Spec()
	ws.Defaults()
	if err := errors.Join(ws.Check(), ws.CheckStartURL(mc.StartURL)); err != nil {
		return nil, fmt.Errorf("web: MCP display: %w", err)
	}
	var policy actions.Policy
	if mc.Policy != nil {
		policy = *mc.Policy
	} else {
		policy = actions.Standard()
		policy.Hosts = nil
		if u, err := url.Parse(mc.StartURL); err == nil && u.Host != "" {
			policy.Hosts = []string{u.Host}
		}
	}
	if err := mc.Rules.Validate(); err != nil {
		return nil, fmt.Errorf("web: MCP rules: %w", err)
	}
	s.mcpRules, s.mcpHosts = mc.Rules, policy.Hosts
	return mcp.New(mcp.Config{
		NewDisplay: func(ctx context.Context) (mcp.Display, error) {
			return newDisplay(ctx, session.Spec{Display: ds, StartURL: mc.StartURL, Policy: &policy})
		},
		StartURL: mc.StartURL,
		Policy:   policy,
		Capture:  screen.CaptureOptions{Size: mc.Image},
		// Each MCP session is a session of kind mcp, under the same id,
		// with its connection recorded: it is resumed after a restart, or
		// by the replica that adopts it (resumeMCP).
		NewID: func() string {
			id, _ := session.NewID()
			return id
		},
		Attach: func(ctx context.Context, id string, d mcp.Display, c mcp.Conn) (mcp.Attached, error) {
			state, err := json.Marshal(c)
			if err != nil {
				return mcp.Attached{}, err
			}
			r, err := s.mgr.AttachRemote(ctx, session.RemoteSpec{ID: id, Kind: session.KindMCP, Title: "MCP session " + id,
				By: "mcp", Rules: s.mcpRules, Hosts: s.mcpHosts, Conn: c.ID, State: state}, d)
			if err != nil {
				return mcp.Attached{}, err
			}
			return s.mcpAttached(r), nil
		},
		MaxSessions: mc.MaxSessions,
		IdleTimeout: mc.IdleTimeout,
		ConnectionPrefix: func() string {
			if s.cluster != nil {
				return s.cluster.id + "."
			}
			return ""
		}(),
		Version: s.cfg.Version,
		Logger:  s.log,
	})
}

// mcpAttached is what an MCP session reports to: its session r, which
// ends when the MCP session does, unless this server is handing its
// sessions over (handOverMCP).
func (s *Server) mcpAttached(r session.Remote) mcp.Attached {
	return mcp.Attached{Approver: r.Approver, Trace: r.Trace, OnEvent: r.OnEvent,
		Close: func(ctx context.Context) error {
			if s.mcpHandover.Load() {
				return nil
			}
			return s.mgr.Detach(ctx, r.ID)
		}}
}

// handOverMCP closes the MCP sessions' displays because this server
// stops, leaving their records live: a restart resumes them, or the
// replica that adopts them does.
func (s *Server) handOverMCP(ctx context.Context) error {
	s.mcpHandover.Store(true)
	return s.mcp.Close(ctx)
}

// resumeMCP opens an MCP session again that was live when its server
// stopped (after a restart, or on the replica that adopted it): a display
// at its last page, in the connection it belonged to, which its client
// finds again with the same Mcp-Session-Id.
func (s *Server) resumeMCP(ctx context.Context, r session.RemoteResume) error {
	var c mcp.Conn
	if len(r.State) == 0 {
		return errors.New("its record names no connection (it was made by an earlier version); the client starts a new one")
	}
	if err := json.Unmarshal(r.State, &c); err != nil {
		return fmt.Errorf("its connection: %w", err)
	}
	return s.mcp.Resume(ctx, mcp.Resumed{ID: r.ID, URL: r.URL, Conn: c, FrameSeq: r.FrameSeq, Note: r.Note,
		Attach: func(ctx context.Context, d mcp.Display) (mcp.Attached, error) {
			rr, err := s.mgr.ReattachRemote(r.ID, s.mcpRules, s.mcpHosts, d)
			if err != nil {
				return mcp.Attached{}, err
			}
			return s.mcpAttached(rr), nil
		}})
}

func (s *Server) closeStore() error {
	if s.ownSt {
		return s.st.Close()
	}
	return nil
}

// answer is the first handler of every request. It answers a panic with a
// JSON 500, bounds each write of the answer (HTTPConfig.WriteTimeout), and
// turns every error answer that is not JSON (net/http's, gin's, a
// dependency's http.Error) into {"error": "..."}.
func (s *Server) answer(c *gin.Context) {
	w := &answerWriter{ResponseWriter: c.Writer, rc: http.NewResponseController(c.Writer), timeout: s.cfg.HTTP.WriteTimeout}
	c.Writer = w
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(c.Request.Context(), "panic", "method", c.Request.Method, "path", c.FullPath(), "panic", v, "stack", string(debug.Stack()))
			if w.ResponseWriter.Written() {
				panic(http.ErrAbortHandler) // cut the answer short: the client sees it break
			}
			w.fail(http.StatusInternalServerError, "internal error")
			c.Abort()
		}
		w.finish()
		// What the handler wrote may still be in net/http's buffer, which
		// it flushes once the request's span and log are done: that last
		// write gets a whole WriteTimeout too.
		w.deadline()
	}()
	c.Next()
}

// answerWriter is the ResponseWriter of every request (see answer). An
// error answer whose Content-Type is not JSON is held back until the
// handler returns, and then written as {"error": its first line}.
type answerWriter struct {
	gin.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	held    bool   // an error answer that is not JSON, for finish
	text    []byte // what the handler wrote of it, clipped
}

// hold reports whether what is written now belongs to a held error answer.
func (w *answerWriter) hold() bool {
	if !w.held && !w.ResponseWriter.Written() && w.ResponseWriter.Status() >= 400 && !isJSON(w.Header().Get("Content-Type")) {
		w.held = true
	}
	return w.held
}

// deadline bounds the next write.
func (w *answerWriter) deadline() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *answerWriter) Write(b []byte) (int, error) {
	if w.hold() {
		w.keep(b)
		return len(b), nil
	}
	w.deadline()
	return w.ResponseWriter.Write(b)
}

func (w *answerWriter) WriteString(s string) (int, error) {
	if w.hold() {
		w.keep([]byte(s))
		return len(s), nil
	}
	w.deadline()
	return w.ResponseWriter.WriteString(s)
}

func (w *answerWriter) WriteHeaderNow() {
	if w.hold() {
		return
	}
	w.deadline()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *answerWriter) Flush() {
	if w.hold() {
		return
	}
	w.deadline()
	w.ResponseWriter.Flush()
}

func (w *answerWriter) Written() bool { return w.held || w.ResponseWriter.Written() }

// Unwrap lets http.ResponseController reach the connection.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

const maxHeldText = 512

func (w *answerWriter) keep(b []byte) {
	if room := maxHeldText - len(w.text); room > 0 {
		w.text = append(w.text, b[:min(len(b), room)]...)
	}
}

// fail replaces the answer with a JSON error; none of it went out yet.
func (w *answerWriter) fail(code int, msg string) {
	w.held, w.text = true, []byte(msg)
	w.ResponseWriter.WriteHeader(code)
}

// finish writes a held error answer as JSON.
func (w *answerWriter) finish() {
	if !w.held {
		return
	}
	w.held = false
	code := w.ResponseWriter.Status()
	msg, _, _ := strings.Cut(strings.TrimSpace(strings.ToValidUTF8(string(w.text), "")), "\n")
	msg = strings.TrimSpace(msg)
	if msg == "" {
		msg = strings.ToLower(http.StatusText(code))
	}
	b, _ := json.Marshal(gin.H{"error": msg})
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.deadline()
	_, _ = w.ResponseWriter.Write(b)
}

// isJSON reports whether a Content-Type is JSON.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
