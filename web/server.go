// Package web is the HTTP side of `spotter serve`: the session protocol
// (PUT /session, POST /session/:id, answered with SSE streams), the
// approvals and audit routes, the executor API for clients with their own
// agent loop, takeover, and the approval panel's embedded assets. The
// contract is docs/API.md.
//
// Every route but the login page, the panel's static assets and /healthz
// needs credentials: a bearer token, or the cookie POST /login sets, with a
// CSRF token on state-changing requests. Cross-site requests are refused.
// web never performs actions itself: sessions (package web/session) run the
// harness loop, and decisions on approvals come only from authenticated
// requests.
package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/mcp"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/store"
	"github.com/spotter-harness/spotter/web/panel"
	"github.com/spotter-harness/spotter/web/session"
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
	// runner.OpenDisplay, whose only way out is an egress proxy allowing
	// the session's policy hosts and its start URL's host
	// (runner.EgressFor). Nil means a Chromium process per session on the
	// host. The Server does not close them. NewDisplay, when set, wins.
	Sandboxes *runner.Sandboxes
	Browser   string // Chromium executable; "" looks it up
	// Getenv supplies provider keys and base URLs (nil: none).
	Getenv func(string) string
	Logger *slog.Logger // nil: slog.Default()
	// NewModel builds a session's model; nil means the provider adapters,
	// configured from Getenv. image is the size of the screenshots the
	// model is sent; tools are the session's application-side tools.
	NewModel func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error)
	// NewDisplay opens a session's display; nil means Chromium (cdp.Open).
	NewDisplay func(ctx context.Context, d session.DisplaySpec) (session.Display, error)
	// ApprovalTimeout is how long an approval waits for a human before it
	// counts as a denial, unless a session's rules say otherwise; default
	// approvals.DefaultTimeout.
	ApprovalTimeout time.Duration
	// Store, when set, is used instead of opening DB; the Server does not
	// close it.
	Store store.Store
	// MCP configures the MCP server mounted at /mcp.
	MCP MCPConfig
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
	assets fs.FS
	cop    *http.CrossOriginProtection
	limits limiter // rate limits (ratelimit.go)

	mcp  *mcp.Server
	mcpH http.Handler // mcp's streamable HTTP handler, which holds the MCP sessions
}

// New opens the store, restores the stored sessions (resuming those that
// were cut short) and builds the handler. ctx bounds the start only.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("web: Config.DataDir is required")
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("web: data directory: %w", err)
	}
	s := &Server{cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()), token: cfg.Token, st: cfg.Store}
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
			return defaultModel(m, image, tools, getenv, s.log)
		}
	}
	newDisplay := s.opener()
	mgr, err := session.New(session.Config{
		Store: s.st,
		Dir:   filepath.Join(cfg.DataDir, "sessions"),
		NewModel: func(ctx context.Context, sp session.Spec, image screen.Size) (harness.Model, error) {
			return newModel(ctx, sp.Model, image, sp.Tools)
		},
		NewDisplay:      newDisplay,
		ApprovalTimeout: cfg.ApprovalTimeout,
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
	if err := mgr.Restore(ctx); err != nil {
		// A session that cannot be restored is reported; the others run.
		s.log.Error("restore sessions", "err", err)
	}
	s.assets = panel.FS
	s.engine = s.routes()
	return s, nil
}

// Token returns the credential clients must present.
func (s *Server) Token() string { return s.token }

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.engine }

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
// (open streams are cut after 10 seconds). It does not close the sessions:
// Close does.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.engine, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }} // streams end with ctx
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
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
	return err
}

// Close stops every session (they resume on the next start), closes their
// displays and the store.
func (s *Server) Close(ctx context.Context) error {
	merr := s.mcp.Close(ctx)
	err := s.mgr.Close(ctx)
	return errors.Join(merr, err, s.closeStore())
}

// opener returns how sessions open their displays: Config.NewDisplay, a
// sandboxed browser (Config.Sandboxes), or a browser on the host.
func (s *Server) opener() func(context.Context, session.Spec) (session.Display, error) {
	cfg := s.cfg
	switch {
	case cfg.NewDisplay != nil:
		return func(ctx context.Context, sp session.Spec) (session.Display, error) {
			return cfg.NewDisplay(ctx, sp.Display)
		}
	case cfg.Sandboxes != nil:
		return func(ctx context.Context, sp session.Spec) (session.Display, error) {
			var hosts []string
			if sp.Policy != nil {
				hosts = sp.Policy.Hosts
			}
			return runner.OpenDisplay(ctx, runner.DisplayRequest{Viewport: sp.Display.Size(), DPR: sp.Display.DPR,
				Browser: cfg.Browser, StartURL: sp.StartURL, Sandboxes: cfg.Sandboxes,
				Egress: runner.EgressFor(hosts, sp.StartURL), Logger: s.log})
		}
	}
	return func(ctx context.Context, sp session.Spec) (session.Display, error) {
		return cdp.Open(ctx, cdp.Config{Exec: cfg.Browser, Viewport: sp.Display.Size(), DPR: sp.Display.DPR, Logger: s.log})
	}
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
	return mcp.New(mcp.Config{
		NewDisplay: func(ctx context.Context) (mcp.Display, error) {
			return newDisplay(ctx, session.Spec{Display: ds, StartURL: mc.StartURL, Policy: &policy})
		},
		StartURL: mc.StartURL,
		Policy:   policy,
		Capture:  screen.CaptureOptions{Size: mc.Image},
		Attach: func(ctx context.Context, id string, d mcp.Display) (mcp.Attached, error) {
			r, err := s.mgr.AttachRemote(ctx, session.KindMCP, "MCP session "+id, "mcp", mc.Rules, policy.Hosts, d)
			if err != nil {
				return mcp.Attached{}, err
			}
			return mcp.Attached{Approver: r.Approver, Trace: r.Trace, OnEvent: r.OnEvent,
				Close: func(ctx context.Context) error { return s.mgr.Detach(ctx, r.ID) }}, nil
		},
		MaxSessions: mc.MaxSessions,
		Logger:      s.log,
	})
}

func (s *Server) closeStore() error {
	if s.ownSt {
		return s.st.Close()
	}
	return nil
}
