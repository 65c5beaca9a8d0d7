package containerd

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"github.com/spotter-harness/spotter/internal/agent"
	"github.com/spotter-harness/spotter/internal/syncbuf"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/vnc"
)

// runcRuntime is the containerd runtime (shim) of the sandboxes.
const runcRuntime = "io.containerd.runc.v2"

// closeTimeout bounds the removal of a sandbox.
const closeTimeout = 30 * time.Second

// Sandbox is one container running an agent that starts browsers. It is
// safe for concurrent use; the caller must call Close.
type Sandbox struct {
	r    *Runtime
	id   string
	dir  string
	cfg  isolate.Config
	log  *slog.Logger
	sock string // the agent's socket, on the host

	container client.Container // nil until created
	task      client.Task      // nil until created
	exited    chan struct{}    // closed when the task has exited, once it was started

	proxyCancel context.CancelFunc
	proxyDone   chan error

	// The start in progress: Close cancels it and waits for it to end
	// before it removes what the start made, so that a sandbox closed
	// while it starts (its Runtime closed) leaves no container behind.
	startCancel context.CancelFunc
	startDone   chan struct{}

	mu      sync.Mutex
	cause   error // why the sandbox died; nil while it works
	closing bool
	claimed bool // Claim gave it its session

	closeOnce sync.Once
	closeErr  error
}

var _ isolate.Sandbox = (*Sandbox)(nil)

// deathError says why a sandbox died; it wraps isolate.ErrDead, and
// isolate.ErrOOM when its memory limit killed it.
type deathError struct {
	msg  string
	errs []error
}

func (e *deathError) Error() string   { return e.msg }
func (e *deathError) Unwrap() []error { return e.errs }

// Start makes and starts a sandbox for one session, and returns once its
// agent answers. ctx bounds the start only; the sandbox runs until Close,
// which the caller must call. A sandbox runs one goroutine for its egress
// proxy and one that waits for its container to exit.
func (r *Runtime) Start(ctx context.Context, cfg isolate.Config) (*Sandbox, error) {
	// A bad policy is refused before a container is made for it.
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	s, err := r.StartSpare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Claim(ctx, cfg); err != nil {
		return nil, errors.Join(err, s.Close(ctx))
	}
	return s, nil
}

// StartSpare makes and starts a sandbox for no session yet, with cfg's
// limits, flags and name (its label; empty: its id), but not its Egress
// and OnDecision: a warm pool's sandbox. It has no egress proxy, so
// nothing in it reaches any host until Claim gives it a session. ctx
// bounds the start only; the caller must call Close.
func (r *Runtime) StartSpare(ctx context.Context, cfg isolate.Config) (*Sandbox, error) {
	cfg = r.limits(cfg)
	cfg.Egress, cfg.OnDecision = egress.Policy{}, nil
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	if cfg.MemoryMiB < 64 || cfg.CPUs < 0.01 || cfg.Pids < 16 {
		return nil, fmt.Errorf("start sandbox: limits too small (memory %d MiB, %g CPUs, %d pids): want at least 64 MiB, 0.01 CPUs, 16 pids", cfg.MemoryMiB, cfg.CPUs, cfg.Pids)
	}
	rnd := make([]byte, 8)
	rand.Read(rnd)
	id := idPrefix + hex.EncodeToString(rnd)
	if cfg.Name == "" {
		// containerd drops a label with an empty value: an unnamed
		// sandbox, a warm one among them, is named by its id.
		cfg.Name = id
	}
	s := &Sandbox{
		r:    r,
		id:   id,
		dir:  filepath.Join(r.cfg.StateDir, id),
		cfg:  cfg,
		log:  cfg.Logger.With(logKeyComponent, "sandbox", logKeySandbox, id),
		sock: filepath.Join(r.cfg.StateDir, id, runDirName, agentSocket),
	}
	sctx, scancel := context.WithCancel(ctx)
	s.startCancel, s.startDone = scancel, make(chan struct{})
	if err := r.add(s); err != nil {
		scancel()
		return nil, err
	}
	err := s.start(sctx)
	scancel()
	close(s.startDone)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start sandbox %s: %w", id, err), s.Close(ctx))
	}
	return s, nil
}

// limits returns cfg with the defaults of its limits and logger.
func (r *Runtime) limits(cfg isolate.Config) isolate.Config {
	cfg = withLimits(cfg)
	cfg.Logger = cmp.Or(cfg.Logger, r.cfg.Logger)
	return cfg
}

// withLimits returns cfg with the defaults of its limits.
func withLimits(cfg isolate.Config) isolate.Config {
	cfg.MemoryMiB = cmp.Or(cfg.MemoryMiB, isolate.DefaultMemoryMiB)
	cfg.CPUs = cmp.Or(cfg.CPUs, isolate.DefaultCPUs)
	cfg.Pids = cmp.Or(cfg.Pids, isolate.DefaultPids)
	return cfg
}

// Fits reports whether a sandbox started for spare can serve a session of
// cfg: the same limits and browser flags (what the container was made
// with), whatever its name and egress.
func Fits(spare, cfg isolate.Config) bool {
	spare, cfg = withLimits(spare), withLimits(cfg)
	return spare.MemoryMiB == cfg.MemoryMiB && spare.CPUs == cfg.CPUs && spare.Pids == cfg.Pids &&
		slices.Equal(spare.Flags, cfg.Flags)
}

// Claim gives a sandbox of StartSpare its one session: it starts the egress
// proxy with cfg's Egress, OnDecision and Logger, and names the sandbox
// after cfg.Name in its logs. cfg's limits and flags must be the
// sandbox's (Fits). A sandbox is claimed once: a second Claim is an error,
// so no sandbox serves two sessions.
func (s *Sandbox) Claim(ctx context.Context, cfg isolate.Config) error {
	cfg = s.r.limits(cfg)
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("start sandbox: %w", err)
	}
	if !Fits(s.cfg, cfg) {
		return fmt.Errorf("sandbox %s: started with other limits or flags than the session asks for", s.id)
	}
	proxy, err := egress.New(egress.Config{Policy: cfg.Egress, OnDecision: cfg.OnDecision, Logger: cfg.Logger})
	if err != nil {
		return fmt.Errorf("start sandbox: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.claimed:
		return fmt.Errorf("sandbox %s already serves a session", s.id)
	case s.cause != nil:
		return s.cause
	case s.closing:
		return &deathError{msg: fmt.Sprintf("sandbox %s is closed", s.id), errs: []error{isolate.ErrDead}}
	}
	if cfg.Name != "" {
		s.cfg.Name = cfg.Name
		s.log = cfg.Logger.With(logKeyComponent, "sandbox", logKeySandbox, s.id, "session", cfg.Name)
		// The container's label keeps the id it started with: a round
		// trip to the daemon on every warm start would buy only a name in
		// ctr's listing, which this log line gives.
		s.log.Info("sandbox claimed")
	}
	s.cfg.Egress, s.cfg.OnDecision, s.cfg.Logger = cfg.Egress, cfg.OnDecision, cfg.Logger
	// The egress proxy, outside the sandbox, on a socket inside it: the
	// agent's bridge dials it per connection, so until now every request
	// of the sandbox failed.
	esock := filepath.Join(s.dir, runDirName, egressSocket)
	ln, err := net.Listen("unix", esock)
	if err != nil {
		return fmt.Errorf("egress socket: %w", err)
	}
	if err := os.Chown(esock, int(s.r.cfg.UID), int(s.r.cfg.GID)); err != nil {
		ln.Close()
		return err
	}
	pctx, pcancel := context.WithCancel(context.Background())
	s.proxyCancel, s.proxyDone = pcancel, make(chan error, 1)
	go func() { s.proxyDone <- proxy.Serve(pctx, ln) }()
	s.claimed = true
	return nil
}

func (s *Sandbox) start(ctx context.Context) error {
	started := time.Now()
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(ctx, s.r.cfg.Namespace), s.r.cfg.StartTimeout)
	defer cancel()
	uid, gid := s.r.cfg.UID, s.r.cfg.GID

	// The state directory: who owns it, the sandbox's root, and the
	// directory of sockets shared with it.
	if err := os.Mkdir(s.dir, 0o711); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, ownerFileName), []byte(s.r.owner+"\n"), 0o644); err != nil {
		return err
	}
	if err := makeRootfs(filepath.Join(s.dir, rootfsDirName), uid, gid); err != nil {
		return fmt.Errorf("make root: %w", err)
	}
	run := filepath.Join(s.dir, runDirName)
	if err := os.Mkdir(run, 0o700); err != nil {
		return err
	}
	if err := os.Chown(run, int(uid), int(gid)); err != nil {
		return err
	}

	args := append([]string(nil), s.r.cfg.AgentArgs...)
	args = append(args,
		"--socket", sandboxRun+"/"+agentSocket,
		"--proxy", proxyAddr,
		"--egress", sandboxRun+"/"+egressSocket,
		"--profiles", sandboxHome,
	)
	if s.r.cfg.Chromium != "" {
		args = append(args, "--chromium", s.r.cfg.Chromium)
	}
	args = append(args, "--")
	args = append(args, s.cfg.Flags...)
	opts := specOpts(s.dir, s.r.cfg.Agent, args, uid, gid, limits{
		memoryBytes: s.cfg.MemoryMiB << 20,
		cpus:        s.cfg.CPUs,
		pids:        s.cfg.Pids,
	})
	opts = append(opts, seccomp.WithDefaultProfile())
	c, err := s.r.c.NewContainer(ctx, s.id,
		client.WithNewSpec(opts...),
		client.WithContainerLabels(map[string]string{labelSandbox: s.cfg.Name, labelOwner: s.r.owner}),
		client.WithRuntime(runcRuntime, nil),
	)
	if err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	s.container = c
	logPath := filepath.Join(s.dir, logFileName)
	t, err := c.NewTask(ctx, cio.LogFile(logPath))
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	s.task = t
	exitCh, err := t.Wait(namespaces.WithNamespace(context.Background(), s.r.cfg.Namespace))
	if err != nil {
		return fmt.Errorf("wait for task: %w", err)
	}
	if err := t.Start(ctx); err != nil {
		return fmt.Errorf("start task: %w (agent log: %s)", err, tail(logPath, 2048))
	}
	s.exited = make(chan struct{})
	go s.watchExit(exitCh)

	// The agent answers once it listens.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		_, err := agent.Ping(pctx, s.sock, int(s.r.cfg.UID))
		pcancel()
		if err == nil {
			break
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%w (agent log: %s)", s.Health(ctx), tail(logPath, 2048))
		case <-ctx.Done():
			return fmt.Errorf("agent did not answer: %w (agent log: %s)", errors.Join(err, context.Cause(ctx)), tail(logPath, 2048))
		case <-tick.C:
		}
	}
	s.log.Info("sandbox started", "took", time.Since(started).Round(time.Millisecond),
		"memory_mib", s.cfg.MemoryMiB, "cpus", s.cfg.CPUs, "pids", s.cfg.Pids)
	return nil
}

// watchExit records the task's exit.
func (s *Sandbox) watchExit(exitCh <-chan client.ExitStatus) {
	defer close(s.exited)
	st := <-exitCh
	code, _, err := st.Result()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cause != nil || s.closing {
		return
	}
	switch {
	case err != nil:
		s.cause = &deathError{msg: fmt.Sprintf("sandbox %s: lost its container: %v", s.id, err), errs: []error{isolate.ErrDead}}
	case code == 128+uint32(syscall.SIGKILL):
		s.cause = &deathError{msg: fmt.Sprintf("sandbox %s was killed (SIGKILL)", s.id), errs: []error{isolate.ErrDead}}
	default:
		s.cause = &deathError{msg: fmt.Sprintf("sandbox %s exited with status %d", s.id, code), errs: []error{isolate.ErrDead}}
	}
	s.log.Warn("sandbox died", logKeyErr, s.cause)
}

// oomKilled handles an OOM event of the sandbox's container: the kernel
// killed a process in it for lack of memory. The sandbox counts as dead
// (its browser lost part of itself), and it is killed whole.
func (s *Sandbox) oomKilled() {
	s.mu.Lock()
	if s.cause != nil || s.closing {
		s.mu.Unlock()
		return
	}
	s.cause = &deathError{
		msg:  fmt.Sprintf("sandbox %s was killed: out of memory (limit %d MiB)", s.id, s.cfg.MemoryMiB),
		errs: []error{isolate.ErrOOM, isolate.ErrDead},
	}
	t := s.task
	s.mu.Unlock()
	s.log.Warn("sandbox out of memory", "limit_mib", s.cfg.MemoryMiB)
	if t != nil {
		ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), s.r.cfg.Namespace), 10*time.Second)
		defer cancel()
		if err := t.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
			s.log.Warn("kill sandbox after OOM", logKeyErr, err)
		}
	}
}

// ID returns the sandbox's container id.
func (s *Sandbox) ID() string { return s.id }

// Browser starts a fresh browser in the sandbox and connects to it over
// the agent's socket. cfg.Mode picks the browser: FrameControl runs
// chromium-headless-shell with begin-frame control, Screencast a regular
// headless Chromium, and ModeAuto the first when the host's /usr has the
// headless shell. See isolate.Sandbox.
func (s *Sandbox) Browser(ctx context.Context, cfg cdp.Config) (*cdp.Browser, error) {
	if err := s.dead(); err != nil {
		return nil, err
	}
	frames := cfg.Mode == cdp.FrameControl || cfg.Mode == cdp.ModeAuto && s.r.hasShell
	// The browser sees the sandbox's files, not the host's: an upload
	// hands it copies.
	cfg.StageFiles = s.PutFiles
	cfg.Mode = cdp.Screencast
	if frames {
		cfg.Mode = cdp.FrameControl
	}
	b, err := cdp.Connect(ctx, func(ctx context.Context) (net.Conn, error) {
		return agent.DialBrowser(ctx, s.sock, int(s.r.cfg.UID), frames)
	}, cfg)
	if err != nil {
		log := browserLog(ctx, filepath.Join(s.dir, logFileName))
		if herr := s.dead(); herr != nil {
			return nil, fmt.Errorf("%w (%w) (agent log: %s)", err, herr, log)
		}
		return nil, fmt.Errorf("sandbox %s: %w (agent log: %s)", s.id, err, log)
	}
	return b, nil
}

// PutFiles copies files of the host into the sandbox, through its agent
// (each in a new directory of the sandbox's private temporary storage,
// which counts against its memory limit), and returns their paths there, in
// order: what a browser in the sandbox is handed to upload them. A file
// larger than agent.MaxFileBytes is refused. ctx bounds the copies.
func (s *Sandbox) PutFiles(ctx context.Context, paths []string) ([]string, error) {
	if err := s.dead(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		inside, err := s.putFile(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", s.id, err)
		}
		out = append(out, inside)
	}
	return out, nil
}

// putFile copies one file into the sandbox. Its errors name the file, not
// the host's directories.
func (s *Sandbox) putFile(ctx context.Context, path string) (string, error) {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("file %q: %w", name, pathless(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("file %q: %w", name, pathless(err))
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("file %q is not a regular file", name)
	}
	inside, err := agent.PutFile(ctx, s.sock, int(s.r.cfg.UID), name, fi.Size(), f)
	switch {
	case err == nil:
		return inside, nil
	case errors.Is(err, agent.ErrAgent) || ctx.Err() != nil:
		return "", fmt.Errorf("file %q: %w", name, err)
	}
	// The agent's socket and its error are the host's business.
	s.log.Warn("copy a file into the sandbox", "file", name, logKeyErr, err)
	if derr := s.dead(); derr != nil {
		return "", fmt.Errorf("file %q: %w", name, derr)
	}
	return "", fmt.Errorf("file %q: the sandbox's agent did not take it", name)
}

// pathless is err without the path an *os.PathError names.
func pathless(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}

// Desktop starts a fresh Linux desktop of the given size in the sandbox
// (Xvnc with Openbox and an xterm, or command when it is not empty, run by
// the agent as the sandbox's user)
// and connects to it over the agent's socket: RFB crosses no TCP port. The
// desktop has the sandbox's network: only the egress proxy, which its apps
// must be told to use. ctx bounds the start only; closing the display stops
// the desktop.
func (s *Sandbox) Desktop(ctx context.Context, size screen.Size, command []string, cfg vnc.Config) (*vnc.Display, error) {
	if err := s.dead(); err != nil {
		return nil, err
	}
	if size.Empty() {
		return nil, fmt.Errorf("sandbox %s: desktop size %dx%d", s.id, size.W, size.H)
	}
	d, err := vnc.Connect(ctx, func(ctx context.Context) (net.Conn, error) {
		return agent.DialDesktop(ctx, s.sock, int(s.r.cfg.UID), size.W, size.H, command)
	}, cfg)
	if err != nil {
		log := tail(filepath.Join(s.dir, logFileName), 1024)
		if herr := s.dead(); herr != nil {
			return nil, fmt.Errorf("%w (%w) (agent log: %s)", err, herr, log)
		}
		return nil, fmt.Errorf("sandbox %s: %w (agent log: %s)", s.id, err, log)
	}
	return d, nil
}

// Health returns nil while the sandbox's container runs and its agent
// answers within a few seconds. See isolate.Sandbox. When ctx ends before
// the agent could answer, it returns ctx's error, which does not wrap
// isolate.ErrDead.
func (s *Sandbox) Health(ctx context.Context) error {
	if err := s.dead(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := agent.Ping(ctx, s.sock, int(s.r.cfg.UID)); err != nil {
		if derr := s.dead(); derr != nil {
			return derr
		}
		if ctx.Err() != nil {
			return fmt.Errorf("sandbox %s: health unknown: %w", s.id, context.Cause(ctx))
		}
		return &deathError{msg: fmt.Sprintf("sandbox %s: agent does not answer: %v", s.id, err), errs: []error{isolate.ErrDead}}
	}
	return nil
}

// dead returns why the sandbox died or was closed, or nil.
func (s *Sandbox) dead() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cause != nil {
		return s.cause
	}
	if s.closing {
		return &deathError{msg: fmt.Sprintf("sandbox %s is closed", s.id), errs: []error{isolate.ErrDead}}
	}
	return nil
}

// Close kills the sandbox's processes and removes its task, container,
// egress proxy and state directory. It runs to the end even when ctx is
// canceled, bounded by its own timeout. It is idempotent.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		if s.startCancel != nil {
			s.startCancel()
			<-s.startDone
		}
		ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.WithoutCancel(ctx), s.r.cfg.Namespace), closeTimeout)
		defer cancel()
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		// A start canceled while the daemon made the container or its
		// task may not have heard of them: look them up.
		if s.container == nil {
			if c, err := s.r.c.LoadContainer(ctx, s.id); err == nil {
				s.container = c
			}
		}
		if s.task == nil && s.container != nil {
			if t, err := s.container.Task(ctx, nil); err == nil {
				s.task = t
			}
		}
		var errs []error
		if s.task != nil {
			if _, err := s.task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete task: %w", err))
			}
		}
		if s.exited != nil {
			select {
			case <-s.exited:
			case <-ctx.Done():
			}
		}
		if s.container != nil {
			if err := s.container.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete container: %w", err))
			}
		}
		if s.proxyCancel != nil {
			s.proxyCancel()
			if err := <-s.proxyDone; err != nil {
				errs = append(errs, err)
			}
		}
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, err)
		}
		s.r.remove(s)
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("close sandbox %s: %w", s.id, err)
		}
	})
	return s.closeErr
}

// exec runs args in the sandbox, as its user, and returns what it wrote to
// stdout and stderr, and its exit code. Tests use it to probe the sandbox.
func (s *Sandbox) exec(ctx context.Context, env []string, args ...string) (string, uint32, error) {
	ctx = namespaces.WithNamespace(ctx, s.r.cfg.Namespace)
	spec, err := s.container.Spec(ctx)
	if err != nil {
		return "", 0, err
	}
	p := *spec.Process
	p.Args = args
	p.Env = append(append([]string(nil), p.Env...), env...)
	p.Terminal = false
	var out syncbuf.Buffer
	rnd := make([]byte, 4)
	rand.Read(rnd)
	proc, err := s.task.Exec(ctx, "exec-"+hex.EncodeToString(rnd), &p, cio.NewCreator(cio.WithStreams(nil, &out, &out)))
	if err != nil {
		return "", 0, fmt.Errorf("exec %v: %w", args, err)
	}
	defer proc.Delete(context.WithoutCancel(ctx), client.WithProcessKill)
	ch, err := proc.Wait(ctx)
	if err != nil {
		return "", 0, err
	}
	if err := proc.Start(ctx); err != nil {
		return "", 0, fmt.Errorf("exec %v: %w", args, err)
	}
	var st client.ExitStatus
	select {
	case st = <-ch:
	case <-ctx.Done():
		return out.String(), 0, ctx.Err()
	}
	proc.IO().Wait()
	code, _, err := st.Result()
	return out.String(), code, err
}
