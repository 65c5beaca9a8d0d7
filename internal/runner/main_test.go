package runner

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
)

// The test binary is also the containerd sandboxes' agent ("agent ...").
func TestMain(m *testing.M) {
	isolatetest.AgentMain()
	code := m.Run()
	for _, s := range testSandboxes {
		if err := s.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "closing the test sandboxes:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// One Sandboxes per backend and test binary, as one spotter process has.
var (
	sandboxesMu   sync.Mutex
	testSandboxes = map[isolate.Backend]*wiring.Sandboxes{}
)

// sandboxesFor returns the test binary's Sandboxes of backend. It skips t
// without SPOTTER_INTEGRATION=1, and fails it when containerd is missing.
func sandboxesFor(t testing.TB, backend isolate.Backend) *wiring.Sandboxes {
	t.Helper()
	isolatetest.Integration(t)
	cfg := wiring.SandboxConfig{Backend: backend, Logger: isolatetest.Logger()}
	if backend == isolate.Containerd {
		cfg.Containerd = containerd.Config{Socket: isolatetest.Socket(t), Agent: os.Args[0], AgentArgs: []string{"agent"}}
	}
	sandboxesMu.Lock()
	defer sandboxesMu.Unlock()
	if s := testSandboxes[backend]; s != nil {
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := wiring.NewSandboxes(ctx, cfg)
	if err != nil {
		t.Fatalf("NewSandboxes(%s) = %v", backend, err)
	}
	testSandboxes[backend] = s
	return s
}
