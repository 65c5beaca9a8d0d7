package qa

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spotter-harness/spotter/screen/cdp"
)

// browser is a Chromium this package started for one test: screen/cdp
// drives it over the DevTools pipe (cdp.Connect), and the DOM checks reach
// its page over the DevTools port it also opens on loopback. cdp.Launch
// cannot open that port (chromedp then wants a websocket dialer), so the
// process is started here; the display still goes through screen/cdp.
type browser struct {
	cmd     *exec.Cmd
	profile string
	port    int
	*cdp.Browser
	done chan struct{} // closed when cmd has been waited for
}

// debianShell is the binary behind Debian's chromium-headless-shell script,
// which would not pass a signal on to it.
const debianShell = "/usr/lib/chromium/chromium-headless-shell"

// findBrowser picks the binary and the mode: the headless shell with frame
// control when there is one, else a regular Chromium.
func findBrowser(exe string) (string, cdp.Mode, error) {
	shell := func(p string) bool {
		return strings.Contains(filepath.Base(p), "headless-shell") || strings.Contains(filepath.Base(p), "headless_shell")
	}
	if exe != "" {
		p, err := exec.LookPath(exe)
		if err != nil {
			return "", 0, fmt.Errorf("%w: %v", cdp.ErrNoBrowser, err)
		}
		if shell(p) {
			return p, cdp.FrameControl, nil
		}
		return p, cdp.Screencast, nil
	}
	if fi, err := os.Stat(debianShell); err == nil && fi.Mode()&0o111 != 0 {
		return debianShell, cdp.FrameControl, nil
	}
	if p, err := exec.LookPath("chromium-headless-shell"); err == nil {
		return p, cdp.FrameControl, nil
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, cdp.Screencast, nil
		}
	}
	return "", 0, fmt.Errorf("%w: no chromium-headless-shell or chromium on PATH", cdp.ErrNoBrowser)
}

// startBrowser starts Chromium with its DevTools pipe on a socket pair and
// a DevTools port on loopback, and connects screen/cdp to the pipe. The
// caller must call close.
func startBrowser(ctx context.Context, exe string, cfg cdp.Config) (*browser, error) {
	path, mode, err := findBrowser(exe)
	if err != nil {
		return nil, err
	}
	profile, err := os.MkdirTemp("", "spotter-qa-")
	if err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("socket pair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "cdp-pipe"), os.NewFile(uintptr(fds[1]), "cdp-pipe-browser")
	args := []string{
		"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
		"--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--disable-breakpad", "--disable-hang-monitor",
		"--disable-popup-blocking", "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
		"--disable-backgrounding-occluded-windows", "--force-color-profile=srgb", "--password-store=basic",
		"--use-mock-keychain", "--metrics-recording-only", "--enable-automation",
		"--remote-debugging-pipe", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
		"--user-data-dir=" + profile, "about:blank",
	}
	if mode == cdp.FrameControl {
		args = append(args, "--enable-begin-frame-control", "--run-all-compositor-stages-before-draw", "--disable-checker-imaging")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = []*os.File{theirs, theirs} // fd 3: the browser reads, fd 4: it writes
	cmd.Stderr = &limitedWriter{b: &stderr, n: 64 << 10}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		ours.Close()
		theirs.Close()
		os.RemoveAll(profile)
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	theirs.Close()
	b := &browser{cmd: cmd, profile: profile, done: make(chan struct{})}
	go func() { cmd.Wait(); close(b.done) }() // owned by b: close waits for it
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		b.close()
		return nil, err
	}
	cfg.Mode = mode
	if b.port, err = b.devToolsPort(ctx); err != nil {
		conn.Close()
		b.close()
		return nil, fmt.Errorf("%s: %w (stderr: %s)", path, err, strings.TrimSpace(stderr.String()))
	}
	used := false
	cb, err := cdp.Connect(ctx, func(context.Context) (net.Conn, error) {
		if used {
			return nil, errors.New("the browser's pipe is already in use")
		}
		used = true
		return conn, nil
	}, cfg)
	if err != nil {
		b.close()
		return nil, err
	}
	b.Browser = cb
	return b, nil
}

// devToolsPort waits for Chromium to write the port it listens on.
func (b *browser) devToolsPort(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if data, err := os.ReadFile(filepath.Join(b.profile, "DevToolsActivePort")); err == nil {
			line, _, _ := strings.Cut(string(data), "\n")
			if p, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && p > 0 {
				return p, nil
			}
		}
		select {
		case <-b.done:
			return 0, errors.New("chromium exited at start")
		case <-ctx.Done():
			return 0, fmt.Errorf("no DevTools port: %w", context.Cause(ctx))
		case <-t.C:
		}
	}
}

// close closes the connection, stops the process group (after a grace
// period for a clean exit), waits for it and removes the profile.
func (b *browser) close() {
	if b.Browser != nil {
		b.Browser.Close(context.Background())
	}
	select {
	case <-b.done:
	case <-time.After(3 * time.Second):
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
	}
	os.RemoveAll(b.profile)
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	b *bytes.Buffer
	n int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
