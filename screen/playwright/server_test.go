package playwright

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	kill     bool          // stop kills it
	exited   chan struct{} // closed when the server process has exited
	waitErr  error         // set before exited closes
	stopOnce sync.Once
}

// startServer starts a Playwright browser server with launchServer and
// returns once it prints its wsEndpoint. It fails t if it cannot (with
// SPOTTER_INTEGRATION=1 a missing driver or Chromium fails, as everywhere
// in this package). The server is stopped, with its browser, when t ends.
func startServer(t testing.TB) *playwrightServer {
	t.Helper()
	cfg, exe := serverConfig(t)
	script, err := filepath.Abs(filepath.Join("testdata", "launch-server.js"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{script, filepath.Join(cfg.DriverDir, "package"), exe}, chromiumFlags...)
	return startNode(t, cfg.DriverDir, args, "")
}

// headlessShell is Debian's chromium-headless-shell binary, which a
// run-server launches as Playwright's headless shell.
const headlessShell = "/usr/lib/chromium/chromium-headless-shell"

// startRunServer starts the server that Playwright grids commonly run,
// "playwright run-server", which launches a browser of its own
// installation for each client (it ignores a client's executablePath), with
// the launch options the client sends in a header (runServerHeaders). Its
// installation is a browsers directory (PLAYWRIGHT_BROWSERS_PATH) where
// Debian's headless shell stands where Playwright's downloader would have
// put its own.
func startRunServer(t testing.TB) *playwrightServer {
	t.Helper()
	cfg, _ := serverConfig(t)
	if _, err := os.Stat(headlessShell); err != nil {
		t.Fatalf("start a Playwright run-server: %v (.ci/deps installs chromium-headless-shell)", err)
	}
	b, err := os.ReadFile(filepath.Join(cfg.DriverDir, "package", "browsers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		Browsers []struct{ Name, Revision string }
	}
	if err := json.Unmarshal(b, &reg); err != nil {
		t.Fatalf("browsers.json: %v", err)
	}
	browsers := t.TempDir()
	for _, br := range reg.Browsers {
		if br.Name != "chromium-headless-shell" {
			continue
		}
		dir := filepath.Join(browsers, "chromium_headless_shell-"+br.Revision, "chrome-linux")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(headlessShell, filepath.Join(dir, "headless_shell")); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{filepath.Join(cfg.DriverDir, "package", "cli.js"), "run-server", "--port", "0", "--host", "127.0.0.1"}
	s := startNode(t, cfg.DriverDir, args, "Listening on ", "PLAYWRIGHT_BROWSERS_PATH="+browsers)
	s.kill = true
	return s
}

// runServerHeaders are the headers of a client of a run-server: the launch
// options of the browser it asks for.
func runServerHeaders(t testing.TB) map[string]string {
	t.Helper()
	opts, err := json.Marshal(map[string]any{"headless": true, "chromiumSandbox": false, "args": chromiumFlags})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"x-playwright-launch-options": string(opts)}
}

// serverConfig returns the test config with defaults and the Chromium to
// run, failing t if the driver or Chromium is missing.
func serverConfig(t testing.TB) (Config, string) {
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
	return cfg, exe
}

// startNode runs the driver's Node.js with args (and env besides the
// test's environment) and returns once the first line it prints, after
// prefix, is a ws:// endpoint.
func startNode(t testing.TB, driver string, args []string, prefix string, env ...string) *playwrightServer {
	t.Helper()
	var err error
	cmd := exec.Command(filepath.Join(driver, "node"), args...)
	cmd.Env = append(os.Environ(), env...)
	// Wait returns once the server has exited, even if a process it left
	// behind still holds its output.
	cmd.WaitDelay = 5 * time.Second
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
		endpoint, ok := strings.CutPrefix(line, prefix)
		if !ok || !strings.HasPrefix(endpoint, "ws://") {
			t.Fatalf("the Playwright server printed %q, want its ws:// endpoint; stderr:\n%s", line, s.stderr)
		}
		s.endpoint = endpoint
	case <-s.exited:
		t.Fatalf("the Playwright server exited before printing its endpoint (%v); stderr:\n%s", s.waitErr, s.stderr)
	case <-timer.C:
		t.Fatalf("the Playwright server printed no endpoint within 60s; stderr:\n%s", s.stderr)
	case <-t.Context().Done():
		t.Fatalf("the test ended before the Playwright server started")
	}
	return s
}

// stop closes the server's stdin, which makes launch-server.js close the
// server and its browser, and waits for it to exit; a server that does not
// exit within 20s is killed with its process group. A run-server, which
// reads no stdin and outlives SIGTERM while it has launched a browser, is
// killed at once: its browsers exit when their pipe to it closes. stop is
// idempotent.
func (s *playwrightServer) stop() error {
	var err error
	s.stopOnce.Do(func() {
		s.stdin.Close()
		if s.kill {
			s.cmd.Process.Kill() //nolint:errcheck // it may have exited since
		}
		timer := time.NewTimer(20 * time.Second)
		defer timer.Stop()
		select {
		case <-s.exited:
			if s.waitErr != nil && !s.kill {
				err = fmt.Errorf("server: %v; stderr:\n%s", s.waitErr, s.stderr)
			}
		case <-timer.C:
			err = errors.Join(fmt.Errorf("the server did not exit within 20s of being told to; stderr:\n%s", s.stderr),
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
