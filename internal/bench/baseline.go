package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

//go:embed baseline.js
var baselineJS []byte

// DefaultDriverDir is where screen/playwright/install-driver.sh puts
// playwright-core by default, which the baseline uses.
func DefaultDriverDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "spotter", "playwright-1.52.0")
}

// chromiumFlags are the flags every browser of the benchmark runs with, the
// baseline's included (PLATFORM-NOTES.md).
var chromiumFlags = []string{"--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync"}

// baseline is a Node process running playwright-core: the naive step.
type baseline struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	mu      sync.Mutex
	version string
	stderr  bytes.Buffer
}

func startBaseline(ctx context.Context, driverDir, node, chromium string) (*baseline, error) {
	driverDir = cmp.Or(driverDir, DefaultDriverDir())
	if _, err := os.Stat(filepath.Join(driverDir, "package", "package.json")); err != nil {
		return nil, fmt.Errorf("baseline: playwright-core not found in %s (run screen/playwright/install-driver.sh): %w", driverDir, err)
	}
	if node == "" {
		node = filepath.Join(driverDir, "node")
		if _, err := os.Stat(node); err != nil {
			node = "node"
		}
	}
	if chromium == "" {
		p, err := exec.LookPath("chromium")
		if err != nil {
			return nil, fmt.Errorf("baseline: chromium: %w", err)
		}
		chromium = p
	}
	script := filepath.Join(os.TempDir(), fmt.Sprintf("spotter-bench-baseline-%d.js", os.Getpid()))
	if err := os.WriteFile(script, baselineJS, 0o600); err != nil {
		return nil, err
	}
	flags, _ := json.Marshal(append([]string{"--headless"}, chromiumFlags...))
	b := &baseline{}
	b.cmd = exec.Command(node, script)
	b.cmd.Env = append(os.Environ(), "SPOTTER_DRIVER_DIR="+driverDir, "SPOTTER_CHROMIUM="+chromium,
		"SPOTTER_CHROMIUM_FLAGS="+string(flags))
	b.cmd.Stderr = &b.stderr
	var err error
	if b.in, err = b.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := b.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	b.out = bufio.NewReaderSize(stdout, 1<<20)
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("baseline: start node: %w", err)
	}
	var hello struct {
		Ready   bool   `json:"ready"`
		Version string `json:"version"`
		Error   string `json:"error"`
	}
	if err := b.read(ctx, &hello); err != nil || !hello.Ready {
		b.Close()
		return nil, fmt.Errorf("baseline: playwright did not start: %v %s %s", err, hello.Error, strings.TrimSpace(b.stderr.String()))
	}
	b.version = hello.Version
	return b, nil
}

type baselineReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	NS    int64  `json:"ns"`
	PNG   string `json:"png"`
}

// read reads one JSON line into v, bounded by ctx: a stuck Node process is
// killed.
func (b *baseline) read(ctx context.Context, v any) error {
	done := make(chan error, 1)
	go func() {
		line, err := b.out.ReadBytes('\n')
		if err != nil {
			done <- err
			return
		}
		done <- json.Unmarshal(line, v)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = b.cmd.Process.Kill()
		<-done
		return context.Cause(ctx)
	}
}

func (b *baseline) do(ctx context.Context, cmd map[string]any) (baselineReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	line, _ := json.Marshal(cmd)
	if _, err := b.in.Write(append(line, '\n')); err != nil {
		return baselineReply{}, fmt.Errorf("baseline: %w", err)
	}
	var r baselineReply
	if err := b.read(ctx, &r); err != nil {
		return r, fmt.Errorf("baseline: %w", err)
	}
	if !r.OK {
		return r, fmt.Errorf("baseline: %s", r.Error)
	}
	return r, nil
}

func (b *baseline) open(ctx context.Context, id, url string, dpr float64) error {
	_, err := b.do(ctx, map[string]any{"op": "open", "id": id, "url": url, "w": 1280, "h": 800, "dpr": dpr})
	return err
}

// step clicks the button and takes a screenshot; it returns the time Node
// measured and the screenshot, which must show the swatch in state on.
func (b *baseline) step(ctx context.Context, id string, on bool) (time.Duration, shotCheck, error) {
	r, err := b.do(ctx, map[string]any{"op": "step", "id": id, "x": buttonAt.X, "y": buttonAt.Y, "keep": true})
	if err != nil {
		return 0, shotCheck{}, err
	}
	return r.shot(on)
}

// shot returns the reply's time and screenshot, expected to show the
// swatch in state on.
func (r baselineReply) shot(on bool) (time.Duration, shotCheck, error) {
	data, err := base64.StdEncoding.DecodeString(r.PNG)
	if err != nil {
		return 0, shotCheck{}, fmt.Errorf("baseline: screenshot: %w", err)
	}
	return time.Duration(r.NS), shotCheck{png: data, on: on}, nil
}

// start opens url in a new browser (launch) or a new context of the
// running one and takes its first screenshot; it returns the time Node
// measured and the screenshot, which must show the swatch off.
func (b *baseline) start(ctx context.Context, launch bool, url string) (time.Duration, shotCheck, error) {
	mode := "context"
	if launch {
		mode = "launch"
	}
	r, err := b.do(ctx, map[string]any{"op": "start", "mode": mode, "url": url, "w": modelSize.W, "h": modelSize.H})
	if err != nil {
		return 0, shotCheck{}, err
	}
	return r.shot(false)
}

func (b *baseline) Close() error {
	if b.cmd.Process == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if b.in != nil {
		_, _ = b.do(ctx, map[string]any{"op": "quit"})
		b.in.Close()
	}
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		_ = b.cmd.Process.Kill()
		<-done
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errors.New("baseline: node did not quit")
	}
	return nil
}
