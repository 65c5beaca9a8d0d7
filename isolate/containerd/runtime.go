package containerd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/events"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/typeurl/v2"

	"github.com/spotter-harness/spotter/internal/agent"
	"github.com/spotter-harness/spotter/isolate"
)

// Defaults of Config.
const (
	DefaultNamespace = "spotter"
	DefaultStateDir  = "/run/spotter/isolate"
	DefaultUID       = 10001
	DefaultGID       = 10001
)

// Labels on Spotter's containers.
const (
	labelSandbox = "org.spotter-harness.sandbox" // the session's name
	labelOwner   = "org.spotter-harness.owner"   // "pid:starttime" of the process that made it
)

// idPrefix starts the id of every container this package makes.
const idPrefix = "spotter-"

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeySandbox   = "sandbox"
	logKeyErr       = "err"
)

// Config configures a Runtime. Each zero value is a documented default.
type Config struct {
	// Socket is containerd's socket; empty means isolate.DefaultSocket.
	Socket string
	// Namespace is the containerd namespace of the sandboxes; empty means
	// DefaultNamespace.
	Namespace string
	// StateDir holds one directory per sandbox (its root, its sockets, its
	// agent's log); empty means DefaultStateDir. Unix socket paths under
	// it must stay below 108 bytes.
	StateDir string
	// Agent is the host path of the program run as the sandbox's agent;
	// empty means this program (os.Executable), which must then run
	// internal/agent's Main for AgentArgs.
	Agent string
	// AgentArgs come before the agent's flags; nil means {"agent"} (the
	// hidden "spotter agent" subcommand).
	AgentArgs []string
	// Chromium is the browser's path inside the sandbox; empty means
	// agent.DefaultChromium.
	Chromium string
	// UID and GID run the sandbox's processes; 0 means DefaultUID and
	// DefaultGID. Nothing in the sandbox runs as root.
	UID, GID uint32
	// StartTimeout bounds a sandbox's start, up to its agent answering;
	// 0 means 30s.
	StartTimeout time.Duration
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	c.Socket = cmp.Or(c.Socket, isolate.DefaultSocket)
	c.Namespace = cmp.Or(c.Namespace, DefaultNamespace)
	c.StateDir = cmp.Or(c.StateDir, DefaultStateDir)
	c.UID = cmp.Or(c.UID, DefaultUID)
	c.GID = cmp.Or(c.GID, DefaultGID)
	c.StartTimeout = cmp.Or(c.StartTimeout, 30*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.AgentArgs == nil {
		c.AgentArgs = []string{"agent"}
	}
	if c.Agent == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("find the agent program: %w", err)
		}
		c.Agent = exe
	}
	if _, err := os.Stat(c.Agent); err != nil {
		return c, fmt.Errorf("agent program: %w", err)
	}
	if len(c.StateDir)+len("/"+idPrefix+"0123456789abcdef0123456789abcdef/run/egress.sock") > 107 {
		return c, fmt.Errorf("state directory %q: too long for unix socket paths", c.StateDir)
	}
	return c, nil
}

// Runtime starts sandboxes as containers through containerd's daemon. It
// is safe for concurrent use; the caller must call Close.
type Runtime struct {
	cfg   Config
	log   *slog.Logger
	c     *client.Client
	owner string // labelOwner of this process
	// hasShell says whether the host's /usr, which sandboxes share, has
	// chromium-headless-shell (for cdp.ModeAuto).
	hasShell bool

	// events delivers OOM events to sandboxes until Close.
	evCancel context.CancelFunc
	evDone   chan struct{}

	mu        sync.Mutex
	sandboxes map[string]*Sandbox
	closed    bool
}

// New connects to containerd, removes what crashed runs of Spotter left
// behind (containers, tasks and state directories of processes that no
// longer run), and watches the daemon's OOM events. It returns an error
// wrapping isolate.ErrUnavailable when the daemon does not answer. ctx
// bounds the connection and the cleanup. The Runtime runs one goroutine
// until Close.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("containerd sandbox: %w", err)
	}
	if fi, err := os.Stat(cfg.Socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("containerd at %s: no socket (start the daemon: .ci/containerd): %w", cfg.Socket, isolate.ErrUnavailable)
	}
	c, err := client.New(cfg.Socket, client.WithDefaultNamespace(cfg.Namespace), client.WithTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("containerd at %s: %v: %w", cfg.Socket, err, isolate.ErrUnavailable)
	}
	ctx = namespaces.WithNamespace(ctx, cfg.Namespace)
	if _, err := c.Version(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("containerd at %s: %v: %w", cfg.Socket, err, isolate.ErrUnavailable)
	}
	owner, err := processOwner(os.Getpid())
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("containerd sandbox: %w", err)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o711); err != nil {
		c.Close()
		return nil, fmt.Errorf("containerd sandbox: %w", err)
	}
	r := &Runtime{
		cfg:       cfg,
		log:       cfg.Logger.With(logKeyComponent, "containerd"),
		c:         c,
		owner:     owner,
		sandboxes: map[string]*Sandbox{},
		evDone:    make(chan struct{}),
	}
	for _, p := range agent.DefaultShell {
		if _, err := exec.LookPath(p); err == nil {
			r.hasShell = true
			break
		}
	}
	if err := r.cleanup(ctx); err != nil {
		c.Close()
		return nil, err
	}
	// Subscribe before any task starts, so that no OOM event is missed.
	evctx, cancel := context.WithCancel(namespaces.WithNamespace(context.Background(), cfg.Namespace))
	r.evCancel = cancel
	envs, errs := c.Subscribe(evctx, `topic=="/tasks/oom"`, `namespace==`+strconv.Quote(cfg.Namespace))
	go r.watchEvents(evctx, envs, errs)
	return r, nil
}

// watchEvents hands OOM events to their sandboxes until ctx is done.
func (r *Runtime) watchEvents(ctx context.Context, envs <-chan *events.Envelope, errs <-chan error) {
	defer close(r.evDone)
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-errs:
			if err != nil && ctx.Err() == nil {
				r.log.Warn("containerd events ended; OOM kills are still seen in exit statuses", logKeyErr, err)
			}
			return
		case env := <-envs:
			if env == nil {
				continue
			}
			ev, err := typeurl.UnmarshalAny(env.Event)
			if err != nil {
				continue
			}
			oom, ok := ev.(*apievents.TaskOOM)
			if !ok {
				continue
			}
			r.mu.Lock()
			s := r.sandboxes[oom.ContainerID]
			r.mu.Unlock()
			if s != nil {
				s.oomKilled()
			}
		}
	}
}

// Close stops every sandbox the runtime still has, stops watching events
// and closes the connection to containerd. It runs to the end even when ctx
// is canceled.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	var open []*Sandbox
	for _, s := range r.sandboxes {
		open = append(open, s)
	}
	r.mu.Unlock()
	var errs []error
	for _, s := range open {
		errs = append(errs, s.Close(ctx))
	}
	r.evCancel()
	<-r.evDone
	errs = append(errs, r.c.Close())
	return errors.Join(errs...)
}

func (r *Runtime) add(s *Sandbox) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("containerd runtime is closed")
	}
	r.sandboxes[s.id] = s
	return nil
}

func (r *Runtime) remove(s *Sandbox) {
	r.mu.Lock()
	delete(r.sandboxes, s.id)
	r.mu.Unlock()
}

// processOwner identifies a process by its pid and start time, so that a
// pid reused by another process does not pass for it.
func processOwner(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// plain. Start time is field 22.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.Itoa(pid) + ":" + f[19], nil
}

// ownerAlive reports whether the process that owner names still runs.
func ownerAlive(owner string) bool {
	pid, _, ok := strings.Cut(owner, ":")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || n <= 0 {
		return false
	}
	now, err := processOwner(n)
	return err == nil && now == owner
}
