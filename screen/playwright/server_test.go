package playwright

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// playwrightServer is a Playwright browser server, as a Playwright grid
// runs one: testdata/launch-server.js calls chromium.launchServer with
// Debian's Chromium, under the driver's Node.js and playwright-core.
type playwrightServer struct {
	endpoint string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *lockedBuffer
	exited   chan struct{} // closed when the server process has exited
	waitErr  error         // set before exited closes
	stopOnce sync.Once
}

// startServer starts a Playwright browser server and returns once it
// prints its wsEndpoint. It fails t if it cannot (with SPOTTER_INTEGRATION=1
// a missing driver or Chromium fails, as everywhere in this package). The
// server is stopped, with its browser, when t ends.
func startServer(t testing.TB) *playwrightServer {
	t.Helper()
	integration(t)
	cfg, err := testConfig(Config{}).withDefaults()
	if err != nil {
		t.Fatalf("test config: %v", err)
	}
	if err := checkDriver(cfg.DriverDir); err != nil {
		t.Fatalf("start a Playwright server: %v", err)
	}
	exe, err := exec.LookPath(cfg.Exec)
	if err != nil {
		t.Fatalf("start a Playwright server: chromium: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "launch-server.js"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{script, filepath.Join(cfg.DriverDir, "package"), exe}, chromiumFlags...)
	cmd := exec.Command(filepath.Join(cfg.DriverDir, "node"), args...)
	// A process group of its own, so that the browser goes with the
	// server if the server must be killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	first := &firstLine{line: make(chan string, 1)}
	s := &playwrightServer{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = first, s.stderr
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a Playwright server: %v", err)
	}
	go func() { // owned by s: stop waits for it
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stop the Playwright server: %v", err)
		}
	})
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case line := <-first.line:
		if !strings.HasPrefix(line, "ws://") {
			t.Fatalf("the Playwright server printed %q, want its ws:// endpoint; stderr:\n%s", line, s.stderr)
		}
		s.endpoint = line
	case <-s.exited:
		t.Fatalf("the Playwright server exited before printing its endpoint (%v); stderr:\n%s", s.waitErr, s.stderr)
	case <-timer.C:
		t.Fatalf("the Playwright server printed no endpoint within 60s; stderr:\n%s", s.stderr)
	case <-t.Context().Done():
		t.Fatalf("the test ended before the Playwright server started")
	}
	return s
}

// stop closes the server's stdin, which closes the server and its browser,
// and waits for it to exit; a server that does not exit within 20s is
// killed with its process group. stop is idempotent.
func (s *playwrightServer) stop() error {
	var err error
	s.stopOnce.Do(func() {
		s.stdin.Close()
		timer := time.NewTimer(20 * time.Second)
		defer timer.Stop()
		select {
		case <-s.exited:
			if s.waitErr != nil {
				err = fmt.Errorf("server: %v; stderr:\n%s", s.waitErr, s.stderr)
			}
		case <-timer.C:
			err = errors.Join(fmt.Errorf("the server did not exit within 20s of its stdin closing; stderr:\n%s", s.stderr),
				syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL))
			<-s.exited
		}
	})
	return err
}

// alive reports whether the server process is still running.
func (s *playwrightServer) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// firstLine is a writer that sends the first line written to it.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	sent bool
	line chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.line <- strings.TrimSpace(string(w.buf[:i]))
		w.sent = true
	}
	return len(p), nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// connectBrowser connects a Browser to the server at endpoint, closed when
// t ends.
func connectBrowser(t testing.TB, endpoint string) *Browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	b, err := Launch(ctx, testConfig(Config{WSEndpoint: endpoint}))
	if err != nil {
		t.Fatalf("Launch(WSEndpoint: %s) = %v", endpoint, err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("Close() of a connected browser = %v", err)
		}
	})
	return b
}
