// Package agent is the small program that runs inside a sandbox: it starts
// Chromium there and carries its traffic out, without any TCP port open to
// the host.
//
// The agent listens on a unix socket in a directory the host bind-mounts
// into the sandbox. Each connection starts with a one-line request:
//
//	PING\n  → "OK browsers=N\n", then the agent closes the connection
//	CDP\n   → the agent starts a fresh Chromium with --remote-debugging-pipe
//	          and answers "OK pid=N\n" (or "ERR reason\n"); from then on the
//	          connection carries the browser's pipe protocol both ways
//	CDP frame-control\n
//	        → the same with chromium-headless-shell started with begin-frame
//	          control, for screen/cdp's FrameControl mode
//	PUT SIZE NAME\n
//	        → the agent answers "OK ready" (or "ERR reason": a NAME that is
//	          not a base name, a SIZE over MaxFileBytes), then reads exactly
//	          SIZE bytes, writes them to a file NAME in a new directory of
//	          its own below Config.ProfileDir, and answers "OK path=PATH",
//	          the file's path inside the sandbox (or "ERR reason"): how a
//	          file of the host reaches the sandbox's browser, which cannot
//	          see the host's file system
//	VNC WxH [argv]\n
//	        → the agent starts a fresh desktop of that size (Xvnc with Openbox
//	          and an xterm, screen/vnc/desktop; argv, a JSON array of strings,
//	          replaces the xterm) and answers "OK display=:N";
//	          from then on the connection carries RFB to and from the
//	          desktop's unix socket
//
// Closing a CDP connection stops its browser (the pipe closes; after a grace
// period the process group is killed) and removes its profile directory;
// closing a VNC connection stops its desktop and removes its directory.
// [DialBrowser], [DialDesktop] and [Ping] are the host's side of this
// protocol.
//
// The browser's only network is an HTTP proxy the agent serves on a loopback
// address of the sandbox's own network namespace (Config.ProxyAddr): each
// connection there is forwarded to a unix socket (Config.EgressSocket) on
// which the host's egress proxy enforces the session's allowlist. Chromium
// gets --proxy-server for that address and --proxy-bypass-list=<-loopback>,
// so that even loopback URLs go through the proxy.
//
// Started as PID 1 of a PID namespace, [Main] first becomes a minimal init: it
// starts itself again as a child, forwards SIGTERM and SIGINT to it, reaps
// every orphan, and exits when the child does.
package agent

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spotter-harness/spotter/internal/chromeflags"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeyPID       = "pid"
	logKeyErr       = "err"
)

// browserGrace is how long a browser whose connection closed may take to
// exit by itself before its process group is killed.
const browserGrace = 2 * time.Second

// DefaultChromium lists where the agent looks for Chromium, in order. The
// first is Debian's binary itself, without the launcher script (which needs
// /etc/chromium.d).
var DefaultChromium = []string{"/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome"}

// DefaultShell lists where the agent looks for chromium-headless-shell, in
// order; Debian's /usr/bin script runs the binary without exec, so the
// binary comes first.
var DefaultShell = []string{"/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell"}

// Config configures the agent.
type Config struct {
	// Socket is the unix socket the agent listens on. Required.
	Socket string
	// ProxyAddr is the loopback TCP address ("127.0.0.1:3128") on which the
	// agent bridges the browser's proxy traffic to EgressSocket. Empty
	// means no bridge, and the browser gets no proxy flags.
	ProxyAddr string
	// EgressSocket is the unix socket of the host's egress proxy. Required
	// with ProxyAddr.
	EgressSocket string
	// Chromium is the browser binary; empty means the first of
	// DefaultChromium that exists.
	Chromium string
	// Shell is the headless shell for "CDP frame-control" requests;
	// empty means the first of DefaultShell that exists. Without one,
	// such requests are refused.
	Shell string
	// Flags are extra Chromium flags, after the agent's own.
	Flags []string
	// ProfileDir is where each browser's fresh profile directory is made;
	// empty means os.TempDir().
	ProfileDir string
	// Logger receives the agent's diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// Agent is a listening agent; Serve runs it.
type Agent struct {
	cfg      Config
	chromium string
	shell    string // "" when there is none
	log      *slog.Logger
	ln       net.Listener
	proxyLn  net.Listener // nil without a proxy bridge
	wg       sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	browsers int
	uploads  []string // directories of files PUT requests brought, removed when Serve ends
}

// Listen checks cfg, finds Chromium and listens on cfg.Socket and
// cfg.ProxyAddr. The caller must call Serve, which closes the listeners.
func Listen(cfg Config) (*Agent, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Socket == "" {
		return nil, errors.New("agent: no socket given")
	}
	if cfg.ProxyAddr != "" && cfg.EgressSocket == "" {
		return nil, errors.New("agent: a proxy address needs an egress socket")
	}
	chromium, err := findChromium(cfg.Chromium)
	if err != nil {
		return nil, err
	}
	shell, _ := findBinary(cfg.Shell, DefaultShell)
	a := &Agent{cfg: cfg, chromium: chromium, shell: shell, log: cfg.Logger.With(logKeyComponent, "agent"), conns: map[net.Conn]struct{}{}}
	os.Remove(cfg.Socket) // a socket left by an earlier agent
	if a.ln, err = net.Listen("unix", cfg.Socket); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if cfg.ProxyAddr != "" {
		if a.proxyLn, err = net.Listen("tcp", cfg.ProxyAddr); err != nil {
			a.ln.Close()
			return nil, fmt.Errorf("agent: proxy bridge: %w", err)
		}
	}
	return a, nil
}

// Serve serves the agent's socket and proxy bridge until ctx is done, then
// closes every connection, stops every browser and returns nil. When Serve
// returns, its goroutines have ended and its browsers have been reaped.
func (a *Agent) Serve(ctx context.Context) error {
	a.log.Info("agent ready", "socket", a.cfg.Socket, "proxy", a.cfg.ProxyAddr, "chromium", a.chromium, "shell", a.shell)
	a.wg.Go(func() { a.accept(a.ln, a.serve) })
	if a.proxyLn != nil {
		a.wg.Go(func() { a.accept(a.proxyLn, a.bridge) })
	}
	<-ctx.Done()
	a.ln.Close()
	if a.proxyLn != nil {
		a.proxyLn.Close()
	}
	a.mu.Lock()
	a.closed = true
	for c := range a.conns {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
	for _, dir := range a.uploads {
		os.RemoveAll(dir)
	}
	return nil
}

// Run is Listen followed by Serve.
func Run(ctx context.Context, cfg Config) error {
	a, err := Listen(cfg)
	if err != nil {
		return err
	}
	return a.Serve(ctx)
}

// accept runs handle for each connection of ln until ln closes.
func (a *Agent) accept(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			c.Close()
			return
		}
		a.conns[c] = struct{}{}
		a.wg.Add(1)
		a.mu.Unlock()
		go func() {
			defer a.wg.Done()
			defer func() {
				a.mu.Lock()
				delete(a.conns, c)
				a.mu.Unlock()
				c.Close()
			}()
			handle(c)
		}()
	}
}

// serve answers one request on the agent's socket.
func (a *Agent) serve(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(c, 64)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	switch strings.TrimSpace(line) {
	case "PING":
		a.mu.Lock()
		n := a.browsers
		a.mu.Unlock()
		fmt.Fprintf(c, "OK browsers=%d\n", n)
	case "CDP":
		a.browser(c, br, false)
	case "CDP frame-control":
		if a.shell == "" {
			fmt.Fprintf(c, "ERR no chromium-headless-shell (looked for %s)\n", strings.Join(DefaultShell, ", "))
			return
		}
		a.browser(c, br, true)
	default:
		if size, name, ok := parsePut(strings.TrimSpace(line)); ok {
			a.put(c, br, size, name)
			return
		}
		if size, apps, ok := parseVNC(strings.TrimSpace(line)); ok {
			a.desktop(c, br, size, apps)
			return
		}
		fmt.Fprintf(c, "ERR unknown request %q\n", clip(strings.TrimSpace(line)))
	}
}

// MaxFileBytes bounds one file a PUT request brings into the sandbox. The
// sandbox's temporary directories are memory (tmpfs), counted against its
// memory limit.
const MaxFileBytes = 100 << 20

// parsePut reads a "PUT SIZE NAME" request.
func parsePut(line string) (int64, string, bool) {
	rest, ok := strings.CutPrefix(line, "PUT ")
	if !ok {
		return 0, "", false
	}
	num, name, ok := strings.Cut(rest, " ")
	size, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || size < 0 {
		return 0, "", false
	}
	return size, name, true
}

// put receives one file for the connection c: size bytes from br, written
// to a file name in a new directory, whose path it answers.
func (a *Agent) put(c net.Conn, br *bufio.Reader, size int64, name string) {
	if err := checkFileName(name); err != nil {
		fmt.Fprintf(c, "ERR %v\n", err)
		return
	}
	if size > MaxFileBytes {
		fmt.Fprintf(c, "ERR the file is %d bytes, more than the %d a sandbox takes\n", size, int64(MaxFileBytes))
		return
	}
	dir, err := os.MkdirTemp(a.cfg.ProfileDir, "upload-")
	if err != nil {
		fmt.Fprintf(c, "ERR upload directory: %v\n", err)
		return
	}
	a.mu.Lock()
	a.uploads = append(a.uploads, dir)
	a.mu.Unlock()
	if _, err := fmt.Fprintf(c, "OK ready\n"); err != nil {
		return
	}
	path := filepath.Join(dir, name)
	err = writeFile(path, io.LimitReader(br, size), size)
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintf(c, "ERR %s: %v\n", name, err)
		return
	}
	a.log.Info("file received", "path", path, "bytes", size)
	fmt.Fprintf(c, "OK path=%s\n", path)
}

// writeFile writes exactly size bytes of r to a new file at path.
func writeFile(path string, r io.Reader, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("got %d of %d bytes", n, size)
	}
	return err
}

// checkFileName accepts a file's base name: not empty, no directory, no
// leading dot, no control character, at most 255 bytes.
func checkFileName(name string) error {
	switch {
	case name == "" || len(name) > 255:
		return fmt.Errorf("file name of %d bytes: want 1 to 255", len(name))
	case strings.ContainsAny(name, "/\\") || name != filepath.Base(name):
		return fmt.Errorf("file name %q has a directory", clip(name))
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("file name %q starts with a dot", clip(name))
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("file name %q has a control character", clip(name))
	}
	return nil
}

// desktopApps are the apps of a sandbox's desktop that names none: a
// terminal at the top left, on a background a screenshot tells apart from
// the desktop's.
var desktopApps = []desktop.App{desktop.XTerm("-geometry", "80x24+0+0", "-bg", "#204080", "-fg", "white", "-e", "sh")}

// parseVNC reads a "VNC WxH [argv]" request: the desktop's size, and its
// app (argv as a JSON array of strings) or desktopApps.
func parseVNC(line string) (screen.Size, []desktop.App, bool) {
	rest, ok := strings.CutPrefix(line, "VNC ")
	if !ok {
		return screen.Size{}, nil, false
	}
	dims, argv, _ := strings.Cut(rest, " ")
	var size screen.Size
	if _, err := fmt.Sscanf(dims, "%dx%d", &size.W, &size.H); err != nil {
		return screen.Size{}, nil, false
	}
	if strings.TrimSpace(argv) == "" {
		return size, desktopApps, true
	}
	var app desktop.App
	if err := json.Unmarshal([]byte(argv), &app.Argv); err != nil || len(app.Argv) == 0 || app.Argv[0] == "" {
		return screen.Size{}, nil, false
	}
	return size, []desktop.App{app}, true
}

// desktop runs one desktop for the connection c and copies RFB between c
// and the desktop's socket until either side closes; then it stops the
// desktop.
func (a *Agent) desktop(c net.Conn, br *bufio.Reader, size screen.Size, apps []desktop.App) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	d, err := desktop.Start(ctx, desktop.Config{Size: size, Apps: apps, TempDir: a.cfg.ProfileDir, Logger: a.log})
	if err == nil {
		// The host's first input must reach the app's window.
		err = d.WaitActive(ctx, 10*time.Second)
	}
	cancel()
	if err != nil {
		if d != nil {
			d.Close()
		}
		fmt.Fprintf(c, "ERR %s\n", strings.ReplaceAll(err.Error(), "\n", " | "))
		return
	}
	defer d.Close()
	up, err := net.Dial("unix", d.Socket)
	if err != nil {
		fmt.Fprintf(c, "ERR desktop socket: %v\n", err)
		return
	}
	defer up.Close()
	a.log.Info("desktop started", "display", d.Display, "size", fmt.Sprintf("%dx%d", size.W, size.H))
	if _, err := fmt.Fprintf(c, "OK display=%s\n", d.Display); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(up, br) // host → desktop
		closeWrite(up)
		close(done)
	}()
	io.Copy(c, up) // desktop → host
	c.Close()
	up.Close()
	<-done
	a.log.Info("desktop stopped", "display", d.Display)
}

// browser runs one Chromium for the connection c and copies its pipe
// protocol until either side closes.
func (a *Agent) browser(c net.Conn, br *bufio.Reader, frameControl bool) {
	dir, err := os.MkdirTemp(a.cfg.ProfileDir, "profile-")
	if err != nil {
		fmt.Fprintf(c, "ERR profile directory: %v\n", err)
		return
	}
	defer os.RemoveAll(dir)

	toBrowser, browserIn, err := os.Pipe() // the browser reads fd 3
	if err != nil {
		fmt.Fprintf(c, "ERR %v\n", err)
		return
	}
	browserOut, fromBrowser, err := os.Pipe() // the browser writes fd 4
	if err != nil {
		toBrowser.Close()
		browserIn.Close()
		fmt.Fprintf(c, "ERR %v\n", err)
		return
	}
	bin := a.chromium
	if frameControl {
		bin = a.shell
	}
	cmd := exec.Command(bin, a.flags(dir, frameControl)...)
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	toBrowser.Close()
	fromBrowser.Close()
	if err != nil {
		browserIn.Close()
		browserOut.Close()
		fmt.Fprintf(c, "ERR start %s: %v\n", bin, err)
		return
	}
	pid := cmd.Process.Pid
	log := a.log.With(logKeyPID, pid)
	log.Info("browser started")
	a.mu.Lock()
	a.browsers++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.browsers--
		a.mu.Unlock()
	}()
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		log.Info("browser exited", logKeyErr, err)
		close(exited)
	}()

	var inDone, outDone chan struct{} // nil until the copies start
	if _, err := fmt.Fprintf(c, "OK pid=%d\n", pid); err == nil {
		inDone, outDone = make(chan struct{}), make(chan struct{})
		go func() {
			io.Copy(browserIn, br) // host → browser
			close(inDone)
		}()
		go func() {
			io.Copy(c, browserOut) // browser → host
			close(outDone)
		}()
		select {
		case <-inDone:
		case <-outDone:
		case <-exited:
			// Deliver what the browser wrote before it exited, so the
			// host never loses its last messages; bounded, in case a
			// child of the browser still holds the pipe.
			select {
			case <-outDone:
			case <-time.After(browserGrace):
			}
		}
	}
	// Closing its command pipe asks the browser to exit; after a grace
	// period its whole process group is killed. Closing the connection and
	// the browser's output ends both copies.
	c.Close()
	browserIn.Close()
	select {
	case <-exited:
	case <-time.After(browserGrace):
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
	browserOut.Close()
	if inDone != nil {
		<-inDone
		<-outDone
	}
}

// flags are the browser's command line for the profile directory dir:
// screen/cdp's, as on the host, then the pipe, the profile and the proxy.
func (a *Agent) flags(dir string, frameControl bool) []string {
	mode := cdp.Screencast
	if frameControl {
		mode = cdp.FrameControl
	}
	// The configuration's --disable-features join the command line's
	// one, which Chromium reads only once.
	rest, disabled := chromeflags.SplitFeatures(a.cfg.Flags)
	f := append(cdp.CommandLine(mode, disabled...), "--remote-debugging-pipe", "--user-data-dir="+dir)
	if a.cfg.ProxyAddr != "" {
		f = append(f, "--proxy-server=http://"+a.cfg.ProxyAddr, "--proxy-bypass-list=<-loopback>",
			"--force-webrtc-ip-handling-policy=disable_non_proxied_udp")
	}
	f = append(f, rest...)
	return append(f, "about:blank")
}

// bridge forwards one proxy connection from the browser to the egress
// socket.
func (a *Agent) bridge(c net.Conn) {
	up, err := net.Dial("unix", a.cfg.EgressSocket)
	if err != nil {
		a.log.Warn("egress socket", logKeyErr, err)
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		closeWrite(up)
		close(done)
	}()
	io.Copy(c, up)
	closeWrite(c)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

func findChromium(name string) (string, error) {
	p, err := findBinary(name, DefaultChromium)
	if err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	return p, nil
}

// findBinary returns the path of name, or of the first of defaults found.
func findBinary(name string, defaults []string) (string, error) {
	if name != "" {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("chromium %q: %w", name, err)
		}
		return p, nil
	}
	for _, n := range defaults {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium found (looked for %s)", strings.Join(defaults, ", "))
}

func clip(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
