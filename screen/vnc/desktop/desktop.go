// Package desktop starts a local Linux desktop for Spotter to drive over
// VNC: TigerVNC's Xvnc (Debian's tigervnc-standalone-server) on a free X
// display number, serving RFB on a unix socket only, with a window manager
// and the apps asked for.
//
// The desktop listens on no TCP port at all: X clients reach it through its
// unix sockets with a fresh MIT-MAGIC-COOKIE-1, and RFB clients through a
// socket that only its owner may open, with VNC authentication on top when
// Config.Password is set.
//
// The window manager is Openbox (Debian's openbox): a small stacking window
// manager that needs no panel, session or D-Bus, starts in a few tens of
// milliseconds, and implements the EWMH hints that browsers and tools such
// as xdotool rely on. A window manager matters to an agent: without one,
// windows have no focus-follows-click, no title bars and no stacking, and
// dialogs open at (0,0) under their parent.
package desktop

import (
	"bytes"
	"cmp"
	"context"
	"crypto/des"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
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
	"github.com/spotter-harness/spotter/screen/vnc"
)

// ErrNoXvnc is returned by Start when the Xvnc binary is not found.
var ErrNoXvnc = errors.New("Xvnc not found on PATH: install Debian's tigervnc-standalone-server package (apt-get install -y tigervnc-standalone-server)")

// DefaultSize is the screen size of a desktop whose config names none.
var DefaultSize = screen.Size{W: 1280, H: 800}

// startTimeout bounds the wait for Xvnc to accept connections.
const startTimeout = 10 * time.Second

// stopTimeout is how long Close lets the processes exit on SIGTERM before it
// kills them.
const stopTimeout = 3 * time.Second

// Config configures a desktop. Each zero field is a documented default.
type Config struct {
	// Size is the screen size; zero means DefaultSize.
	Size screen.Size
	// Password, if set, makes the desktop require VNC authentication with
	// it (at most 8 bytes, VNC's limit). Empty means security type None;
	// the RFB socket can be opened only by its owner either way.
	Password string
	// WindowManager is the window manager's command line; nil means
	// {"openbox"}. NoWindowManager runs none.
	WindowManager   []string
	NoWindowManager bool
	// Apps are started once the desktop is up, in order. Start does not
	// wait for their windows to appear.
	Apps []App
	// Xvnc is the Xvnc binary; empty means "Xvnc" on PATH.
	Xvnc string
	// TempDir is where the desktop's directory (sockets, password file,
	// the apps' home, logs) is made; empty means os.TempDir().
	TempDir string
	// LockDir is where desktops lock the display numbers they use, so
	// that desktops of every process on the machine can share it; empty
	// means DefaultLockDir.
	LockDir string
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// App is a program to run on the desktop. It runs with DISPLAY and
// XAUTHORITY set for the desktop, HOME set to a fresh directory of the
// desktop's own (also its working directory), and Env added.
type App struct {
	Argv []string
	Env  []string // extra "KEY=value" entries
}

// XTerm returns an App that runs xterm (Debian's xterm) with args, in a
// 12-point monospace font of fontconfig's choosing (the X server's own
// bitmap fonts are often not installed).
func XTerm(args ...string) App {
	return App{Argv: append([]string{"xterm", "-fa", "Monospace", "-fs", "12"}, args...)}
}

// Chromium returns an App that runs Debian's Chromium, maximized, on url,
// with a profile of its own in the desktop's home directory and without
// the background traffic that a closed network makes pointless. It runs as
// root with --no-sandbox, as containers need.
func Chromium(url string) App {
	argv := append([]string{"chromium"}, chromeflags.Args()...) // no traffic of its own
	return App{Argv: append(argv,
		"--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--password-store=basic",
		"--test-type",                      // no infobar warning about --no-sandbox
		"--user-data-dir=chromium-profile", // relative to the app's working directory, the desktop's home
		"--start-maximized",
		url,
	)}
}

// Desktop is a running Xvnc with its window manager and apps. The caller
// must call Close.
type Desktop struct {
	// Display is the X display, such as ":3". X clients need it and
	// XAUTHORITY (see Env).
	Display string
	// Socket is the path of the unix socket that serves RFB.
	Socket string
	// Password is the VNC password, if the desktop requires one.
	Password string
	// Size is the screen size it started with.
	Size screen.Size

	log   *slog.Logger
	dir   string
	home  string
	xauth string
	num   int
	// displayLock holds the lock on the display number while the desktop
	// runs; lockDir is where such locks live.
	displayLock *os.File
	lockDir     string

	pgid  int
	xvnc  *exec.Cmd
	procs []*proc // every process started, Xvnc first

	closeOnce sync.Once
	closeErr  error
}

// proc is a started process and the end of its Wait.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// Start starts Xvnc on a free display number, then the window manager and
// the apps. ctx bounds the start only; the desktop runs until Close. If
// Start fails, everything it started is stopped again.
func Start(ctx context.Context, cfg Config) (*Desktop, error) {
	if cfg.Size == (screen.Size{}) {
		cfg.Size = DefaultSize
	}
	if cfg.Size.W < 1 || cfg.Size.H < 1 || cfg.Size.W > 8192 || cfg.Size.H > 8192 {
		return nil, fmt.Errorf("start desktop: size %dx%d: want 1..8192 px each way", cfg.Size.W, cfg.Size.H)
	}
	if len(cfg.Password) > 8 {
		return nil, errors.New("start desktop: VNC authentication uses at most 8 bytes of a password; give a shorter one")
	}
	if cfg.WindowManager == nil {
		cfg.WindowManager = []string{"openbox"}
	}
	if cfg.NoWindowManager {
		cfg.WindowManager = nil
	}
	for _, a := range cfg.Apps {
		if len(a.Argv) == 0 {
			return nil, errors.New("start desktop: an app has no command")
		}
	}
	xvncPath, err := exec.LookPath(cmp.Or(cfg.Xvnc, "Xvnc"))
	if err != nil {
		return nil, ErrNoXvnc
	}

	dir, err := os.MkdirTemp(cfg.TempDir, "spotter-desktop-")
	if err != nil {
		return nil, fmt.Errorf("start desktop: %w", err)
	}
	d := &Desktop{
		Socket:   filepath.Join(dir, "rfb.sock"),
		Password: cfg.Password,
		Size:     cfg.Size,
		log:      cmp.Or(cfg.Logger, slog.Default()),
		dir:      dir,
		home:     filepath.Join(dir, "home"),
		xauth:    filepath.Join(dir, "Xauthority"),
		lockDir:  cmp.Or(cfg.LockDir, DefaultLockDir),
	}
	if err := d.start(ctx, cfg, xvncPath); err != nil {
		return nil, errors.Join(fmt.Errorf("start desktop: %w", err), d.Close())
	}
	return d, nil
}

func (d *Desktop) start(ctx context.Context, cfg Config, xvncPath string) error {
	if err := os.Mkdir(d.home, 0o700); err != nil {
		return err
	}
	cookie := make([]byte, 16)
	rand.Read(cookie)
	// The server reads the cookie at start; the display number is not
	// known yet, and the server ignores it.
	if err := writeXauthority(d.xauth, "", cookie); err != nil {
		return err
	}
	security := "None"
	args := []string{
		"-geometry", fmt.Sprintf("%dx%d", cfg.Size.W, cfg.Size.H),
		"-depth", "24",
		"-rfbport", "-1", // no TCP listener
		"-rfbunixpath", d.Socket,
		"-rfbunixmode", "0600",
		"-nolisten", "tcp",
		"-auth", d.xauth,
		"-noreset", // survive the last X client's exit
		"-s", "0",  // no screen saver
		"-dpms",
		"-desktop", "spotter",
	}
	if cfg.Password != "" {
		security = "VncAuth"
		pw := filepath.Join(d.dir, "passwd")
		obf, err := obfuscate(cfg.Password)
		if err != nil {
			return err
		}
		if err := os.WriteFile(pw, obf, 0o600); err != nil {
			return err
		}
		args = append(args, "-PasswordFile", pw)
	}
	args = append(args, "-SecurityTypes", security)

	// The display number is taken under a lock of Spotter's own, and Xvnc
	// is given it explicitly, so that it also takes the X server's lock
	// file (which -displayfd would skip): desktops of several processes
	// then never share a number, and other X servers see it taken. A
	// number taken by an X server that ignores both (one started with
	// -displayfd) makes Xvnc fail, and the next number is tried.
	var num int
	for attempt := 0; ; attempt++ {
		n, lock, err := reserveDisplay(d.lockDir)
		if err != nil {
			return err
		}
		d.displayLock = lock
		xvnc := exec.Command(xvncPath, append([]string{":" + strconv.Itoa(n)}, args...)...)
		xvnc.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + d.home}
		p, err := d.spawn("Xvnc", xvnc)
		if err != nil {
			return err
		}
		d.pgid = xvnc.Process.Pid
		d.num = n
		err = waitReady(ctx, n, d.Socket, p)
		if err == nil {
			num = n
			break
		}
		if !errors.Is(err, errExited) || attempt >= 4 || !strings.Contains(d.logTail("Xvnc"), "already active") {
			return fmt.Errorf("Xvnc on :%d: %w%s", n, err, d.logTail("Xvnc"))
		}
		d.log.Debug("desktop: display number taken by another X server; trying the next", "display", n)
		d.procs, d.pgid = nil, 0
		d.displayLock.Close()
		d.displayLock = nil
	}
	d.Display = ":" + strconv.Itoa(num)
	if err := writeXauthority(d.xauth, strconv.Itoa(num), cookie); err != nil {
		return err
	}

	if err := d.freeKeycodes(ctx); err != nil {
		d.log.Warn("desktop: cannot free key codes for typing characters no US key types; Xvnc can then map only about 20 of them", "err", err)
	}
	if len(cfg.WindowManager) > 0 {
		argv, ready := cfg.WindowManager, ""
		if len(argv) == 1 && argv[0] == "openbox" {
			// Openbox runs its --startup command once it has started,
			// with its theme and configuration loaded.
			ready = filepath.Join(d.dir, "wm-ready")
			argv = []string{"openbox", "--startup", "touch '" + ready + "'"}
		}
		wm, err := d.launch("window manager", App{Argv: argv})
		if err != nil {
			return err
		}
		// Apps start once the window manager runs: an X toolkit app whose
		// window manager does not answer yet waits for it (Xt: up to 5 s)
		// and may never map its window.
		if err := d.waitWindowManager(ctx, wm, ready); err != nil {
			return fmt.Errorf("window manager: %w%s", err, d.logTail("window manager"))
		}
	}
	for i, a := range cfg.Apps {
		if _, err := d.launch(fmt.Sprintf("app %d (%s)", i, filepath.Base(a.Argv[0])), a); err != nil {
			return err
		}
	}
	d.log.Debug("desktop started", "display", d.Display, "socket", d.Socket, "size", fmt.Sprintf("%dx%d", d.Size.W, d.Size.H))
	return nil
}

// keptXF86 are the XF86 keysyms that the actions key table names; their
// key codes stay mapped.
var keptXF86 = map[string]bool{
	"XF86AudioMute": true, "XF86AudioLowerVolume": true, "XF86AudioRaiseVolume": true,
	"XF86AudioNext": true, "XF86AudioPrev": true, "XF86AudioStop": true, "XF86AudioPlay": true,
}

// freeKeycodes unmaps the key codes of the multimedia and launcher keys
// (XF86...) that no action names. Xvnc types a character that is not on
// its keyboard by mapping its keysym to an unused key code, and never
// unmaps it again; the default keymap leaves only about 20 key codes
// unused, so without this a desktop could type only about 20 distinct
// characters beyond US ASCII in its life. This frees about 90 more.
func (d *Desktop) freeKeycodes(ctx context.Context) error {
	list := exec.CommandContext(ctx, "xmodmap", "-pke")
	list.Env = append([]string{"PATH=" + os.Getenv("PATH")}, d.Env()...)
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("xmodmap -pke: %w", err)
	}
	var script strings.Builder
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == "keycode" && f[2] == "=" && strings.HasPrefix(f[3], "XF86") && !keptXF86[f[3]] {
			fmt.Fprintf(&script, "keycode %s =\n", f[1])
		}
	}
	set := exec.CommandContext(ctx, "xmodmap", "-")
	set.Env = list.Env
	set.Stdin = strings.NewReader(script.String())
	if out, err := set.CombinedOutput(); err != nil {
		return fmt.Errorf("xmodmap: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Env returns the environment entries an X client needs to use the
// desktop: DISPLAY and XAUTHORITY.
func (d *Desktop) Env() []string {
	return []string{"DISPLAY=" + d.Display, "XAUTHORITY=" + d.xauth}
}

// Dial connects a vnc.Display to the desktop, with the desktop's password.
func (d *Desktop) Dial(ctx context.Context, cfg vnc.Config) (*vnc.Display, error) {
	cfg.Password = d.Password
	return vnc.Dial(ctx, "unix", d.Socket, cfg)
}

// launch starts an app on the desktop, in the desktop's process group.
func (d *Desktop) launch(name string, a App) (*proc, error) {
	path, err := exec.LookPath(a.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %q not found on PATH (is its Debian package installed?)", name, a.Argv[0])
	}
	cmd := exec.Command(path, a.Argv[1:]...)
	cmd.Dir = d.home
	cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + d.home, "LANG=C.UTF-8"}, d.Env()...), a.Env...)
	return d.spawn(name, cmd)
}

// waitWindowManager waits until the window manager runs: until the file
// ready exists, when it is not empty (Openbox's --startup made it), and
// otherwise until the window manager announces what it supports (EWMH's
// _NET_SUPPORTED on the root window), checking with xprop (Debian's
// x11-utils). A window manager that announces nothing within startTimeout
// is let be, with a warning.
func (d *Desktop) waitWindowManager(ctx context.Context, wm *proc, ready string) error {
	if ready != "" {
		deadline := time.Now().Add(startTimeout)
		for {
			if _, err := os.Stat(ready); err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("not ready after %v", startTimeout)
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-wm.exited:
				return fmt.Errorf("exited at start (%v)", wm.err)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if _, err := exec.LookPath("xprop"); err != nil {
		d.log.Warn("desktop: no xprop (Debian's x11-utils) to tell when the window manager is ready; apps start at once")
		return nil
	}
	deadline := time.Now().Add(startTimeout)
	for {
		cmd := exec.CommandContext(ctx, "xprop", "-root", "_NET_SUPPORTED")
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, d.Env()...)
		out, err := cmd.Output()
		if err == nil && bytes.Contains(out, []byte("_NET_")) {
			return nil
		}
		if time.Now().After(deadline) {
			d.log.Warn("desktop: the window manager announced no EWMH support; apps start anyway", "after", startTimeout)
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-wm.exited:
			return fmt.Errorf("exited at start (%v)", wm.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// spawn starts cmd in the desktop's process group (making one if this is
// the first process) with its output in a log file of the desktop's
// directory. The process is killed if this process dies.
func (d *Desktop) spawn(name string, cmd *exec.Cmd) (*proc, error) {
	logf, err := os.Create(filepath.Join(d.dir, logName(name)))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: d.pgid, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	d.procs = append(d.procs, p)
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func logName(name string) string {
	name, _, _ = strings.Cut(name, " (")
	return strings.ReplaceAll(name, " ", "-") + ".log"
}

// logTail returns the end of a process's log, for an error message.
func (d *Desktop) logTail(name string) string {
	b, err := os.ReadFile(filepath.Join(d.dir, logName(name)))
	if err != nil || len(b) == 0 {
		return ""
	}
	const keep = 1500
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return "\n" + name + " said:\n" + strings.TrimSpace(string(b))
}

// errExited marks an X server that exited before it was ready.
var errExited = errors.New("exited before it was ready")

// waitReady waits until the X server of display n accepts X connections on
// its unix socket and has made its RFB socket.
func waitReady(ctx context.Context, n int, rfb string, p *proc) error {
	xsock := filepath.Join(x11SocketDir, "X"+strconv.Itoa(n))
	deadline := time.Now().Add(startTimeout)
	for {
		if _, err := os.Stat(rfb); err == nil {
			if c, err := net.Dial("unix", xsock); err == nil {
				c.Close()
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v (no X connection on %s or no RFB socket at %s)", startTimeout, xsock, rfb)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-p.exited:
			return fmt.Errorf("%w (%v)", errExited, p.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Close stops every process of the desktop (SIGTERM to its process group,
// then SIGKILL after a few seconds), waits for them, and removes the
// desktop's directory. It is idempotent.
func (d *Desktop) Close() error {
	d.closeOnce.Do(func() {
		if d.pgid > 0 {
			syscall.Kill(-d.pgid, syscall.SIGTERM)
			t := time.NewTimer(stopTimeout)
			killed := false
			for _, p := range d.procs {
				select {
				case <-p.exited:
				case <-t.C:
					killed = true
					syscall.Kill(-d.pgid, syscall.SIGKILL)
					<-p.exited
				}
			}
			t.Stop()
			// Stragglers of the group (children the apps forked).
			syscall.Kill(-d.pgid, syscall.SIGKILL)
			if killed && d.Display != "" {
				// A killed X server leaves its socket and lock file behind.
				os.Remove(filepath.Join(x11SocketDir, "X"+strconv.Itoa(d.num)))
				os.Remove(xLockFile(d.num))
			}
		}
		if d.displayLock != nil {
			d.displayLock.Close() // the number is free again
		}
		if err := os.RemoveAll(d.dir); err != nil {
			d.closeErr = fmt.Errorf("close desktop: %w", err)
		}
	})
	return d.closeErr
}

// writeXauthority writes an Xauthority file with one MIT-MAGIC-COOKIE-1
// entry for any host ("FamilyWild") and the given display number.
func writeXauthority(path, display string, cookie []byte) error {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, 0xffff) // FamilyWild
	for _, field := range [][]byte{nil, []byte(display), []byte("MIT-MAGIC-COOKIE-1"), cookie} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(field)))
		b = append(b, field...)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// vncPasswordKey is the fixed DES key with which VNC servers obfuscate
// stored passwords.
var vncPasswordKey = [8]byte{23, 82, 107, 6, 35, 78, 88, 7}

// obfuscate returns a VNC password file's contents: the password,
// zero-padded to 8 bytes, DES-encrypted with vncPasswordKey. Like the
// authentication challenge, the key is used with each byte's bits
// reversed, as VNC's DES code has always read keys.
func obfuscate(password string) ([]byte, error) {
	var key, in [8]byte
	for i, b := range vncPasswordKey {
		key[i] = bits.Reverse8(b)
	}
	copy(in[:], password)
	c, err := des.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 8)
	c.Encrypt(out, in[:])
	return out, nil
}

// WaitActive waits until the window manager reports an active window:
// an app's window is mapped and has the input focus, so that the first
// keys sent reach it. It returns nil after timeout without one (an app may
// open no window) or when xprop (Debian's x11-utils) is missing, and ctx's
// cause when ctx ends first. It polls the root window's
// _NET_ACTIVE_WINDOW.
func (d *Desktop) WaitActive(ctx context.Context, timeout time.Duration) error {
	if _, err := exec.LookPath("xprop"); err != nil {
		d.log.Warn("desktop: no xprop (Debian's x11-utils) to tell when an app's window has the focus")
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		cmd := exec.CommandContext(wctx, "xprop", "-root", "_NET_ACTIVE_WINDOW")
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, d.Env()...)
		out, err := cmd.Output()
		if err == nil && activeWindow(string(out)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-wctx.Done():
			d.log.Warn("desktop: no window has the focus yet; handed over as it is", "after", timeout)
			return nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// activeWindow reports whether xprop's answer for _NET_ACTIVE_WINDOW
// names a window ("... window id # 0x400007"), not none ("# 0x0").
func activeWindow(xprop string) bool {
	_, id, ok := strings.Cut(strings.TrimSpace(xprop), "# ")
	return ok && strings.HasPrefix(id, "0x") && strings.Trim(id[2:], "0") != ""
}
