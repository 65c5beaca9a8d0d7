package cdp

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

func TestConnectErrors(t *testing.T) {
	refused := errors.New("sandbox is not running")
	tests := []struct {
		name string
		dial func(context.Context) (net.Conn, error)
		cfg  Config
		want string
	}{
		{"no dial", nil, Config{}, "no dial function"},
		{"dial fails", func(context.Context) (net.Conn, error) { return nil, refused }, Config{}, "dial: sandbox is not running"},
		{"bad viewport", func(context.Context) (net.Conn, error) { return nil, refused }, Config{Viewport: screen.Size{W: -1, H: 5}}, "viewport -1x5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Connect(t.Context(), tt.dial, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Connect() = %v, %v; want an error containing %q", b, err, tt.want)
			}
		})
	}
}

// A connection on which no browser ever answers: Connect gives up when
// its context ends, and closes the connection.
func TestConnectSilentPeer(t *testing.T) {
	ours, theirs := net.Pipe()
	defer theirs.Close()
	go io.Copy(io.Discard, theirs)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	b, err := Connect(ctx, func(context.Context) (net.Conn, error) { return ours, nil }, Config{Logger: testLogger()})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect() to a silent peer = %v, %v; want DeadlineExceeded", b, err)
	}
	if _, err := ours.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write on the connection after Connect failed = %v, want it closed", err)
	}
}

// pipeBrowser starts Chromium with --remote-debugging-pipe and returns one
// end of an in-memory connection that carries its pipe protocol, as a
// sandbox's agent would, and the process.
func pipeBrowser(t *testing.T, mode Mode) (net.Conn, *os.Process) {
	t.Helper()
	mode, path, err := findBrowser(mode, "")
	if err != nil {
		t.Fatal(err)
	}
	profile, err := os.MkdirTemp("", "connect-profile")
	if err != nil {
		t.Fatal(err)
	}
	toBrowser, browserIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	browserOut, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--remote-debugging-pipe", "--user-data-dir="+profile, "about:blank")
	if mode == FrameControl {
		cmd.Args = append(cmd.Args[:len(cmd.Args)-1], "--enable-begin-frame-control", "--run-all-compositor-stages-before-draw", "--disable-checker-imaging", "about:blank")
	}
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	ours, theirs := net.Pipe()
	go func() { io.Copy(browserIn, theirs); browserIn.Close() }()
	go func() { io.Copy(theirs, browserOut); theirs.Close() }()
	t.Cleanup(func() {
		// The whole process group; a renderer that has not died yet may
		// still write in the profile directory, so its removal is not
		// checked (t.TempDir would fail on it).
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		os.RemoveAll(profile) // best effort: see above
		theirs.Close()
		browserOut.Close()
	})
	return ours, cmd.Process
}

func TestConnectPipe(t *testing.T) {
	for _, mode := range []Mode{Screencast, FrameControl} {
		t.Run(mode.String(), func(t *testing.T) { testConnectPipe(t, mode) })
	}
}

func testConnectPipe(t *testing.T, mode Mode) {
	integration(t)
	conn, proc := pipeBrowser(t, mode)
	b, err := Connect(t.Context(), func(context.Context) (net.Conn, error) { return conn, nil }, Config{Mode: mode, Logger: testLogger(), CommandTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Connect() = %v", err)
	}
	if b.Mode() != mode {
		t.Errorf("Connect(mode %v).Mode() = %v", mode, b.Mode())
	}
	defer b.Close(context.Background())
	d, err := b.NewDisplay(t.Context(), DisplayConfig{Viewport: screen.Size{W: 800, H: 600}})
	if err != nil {
		t.Fatalf("NewDisplay() = %v", err)
	}
	defer d.Close(context.Background())

	load(t, d, "events.html")
	takeEvents(t, d)
	do(t, d, kind(actions.Click, at(100, 120)))
	got := only(takeEvents(t, d), "click")
	if len(got) != 1 || got[0].X != 100 || got[0].Y != 120 {
		t.Errorf("click at (100,120) over a connection: events %+v, want one click there", got)
	}
	shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
	if err != nil {
		t.Fatalf("Capture() = %v", err)
	}
	if want := (screen.Size{W: 800, H: 600}); shot.Frame.Sent != want {
		t.Errorf("Capture() sent size = %v, want %v", shot.Frame.Sent, want)
	}

	// The far side goes away: the display's calls say so.
	proc.Kill()
	err = d.Perform(t.Context(), screen.Mapped{Action: kind(actions.Click, at(10, 10))})
	if !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform after the browser was killed = %v, want ErrGone", err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Errorf("Display.Close() after the browser was killed = %v", err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Errorf("Browser.Close() after the browser was killed = %v", err)
	}
}

// Launch and Connect with a context that is already done (a task whose
// timeout is negative) fail at once with the context's error. Before,
// they canceled the browser's chromedp context twice, and the second
// cancel waited for good on an allocation that never began: the process
// hung, SIGTERM included. Each try is bounded by a context of its own.
func TestLaunchAndConnectWithDoneContext(t *testing.T) {
	integration(t)
	starts := map[string]func(context.Context) error{
		"launch": func(ctx context.Context) error {
			b, err := Launch(ctx, Config{Logger: testLogger()})
			if err == nil {
				b.Close(context.Background())
			}
			return err
		},
		"connect": func(ctx context.Context) error {
			ours, theirs := net.Pipe()
			defer theirs.Close()
			go io.Copy(io.Discard, theirs)
			b, err := Connect(ctx, func(context.Context) (net.Conn, error) { return ours, nil }, Config{Logger: testLogger()})
			if err == nil {
				b.Close(context.Background())
			}
			return err
		},
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			// The select in Launch and Connect picks at random between
			// the browser's answer and the context's end: several tries.
			for range 5 {
				ctx, cancel := context.WithTimeout(t.Context(), -time.Second)
				done := make(chan error, 1)
				go func() { done <- start(ctx) }()
				bound, stop := context.WithTimeout(t.Context(), 30*time.Second)
				select {
				case err := <-done:
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("%s with an expired context = %v, want DeadlineExceeded", name, err)
					}
				case <-bound.Done():
					t.Fatalf("%s with an expired context did not return within 30s", name)
				}
				stop()
				cancel()
			}
		})
	}
}
