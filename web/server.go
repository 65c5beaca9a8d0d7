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
	"os"
	"path/filepath"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/spotter-harness/spotter/harness"
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
	// Isolate is how session displays are sandboxed: "local" (the
	// default: a Chromium process per session).
	Isolate string
	Browser string // Chromium executable; "" looks it up
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
}

// New opens the store, restores the stored sessions (resuming those that
// were cut short) and builds the handler. ctx bounds the start only.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("web: Config.DataDir is required")
	}
	switch cfg.Isolate {
	case "", "local":
	default:
		return nil, fmt.Errorf("web: isolate %q is not supported by the server yet (want local)", cfg.Isolate)
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
	newDisplay := cfg.NewDisplay
	if newDisplay == nil {
		newDisplay = func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return cdp.Open(ctx, cdp.Config{Exec: cfg.Browser, Viewport: d.Size(), DPR: d.DPR, Logger: s.log})
		}
	}
	mgr, err := session.New(session.Config{
		Store: s.st,
		Dir:   filepath.Join(cfg.DataDir, "sessions"),
		NewModel: func(ctx context.Context, sp session.Spec, image screen.Size) (harness.Model, error) {
			return newModel(ctx, sp.Model, image, sp.Tools)
		},
		NewDisplay: func(ctx context.Context, sp session.Spec) (session.Display, error) {
			return newDisplay(ctx, sp.Display)
		},
		ApprovalTimeout: cfg.ApprovalTimeout,
		Logger:          s.log,
	})
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.mgr = mgr
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
	err := s.mgr.Close(ctx)
	return errors.Join(err, s.closeStore())
}

func (s *Server) closeStore() error {
	if s.ownSt {
		return s.st.Close()
	}
	return nil
}
