package containerd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
)

// The test binary is also the sandbox's agent ("agent ...") and a probe the
// tests run inside a sandbox ("probe ...").
func TestMain(m *testing.M) {
	isolatetest.AgentMain()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "probe":
			os.Exit(probe(os.Args[2:]))
		case "orphan":
			os.Exit(orphan())
		}
	}
	code := m.Run()
	if testRuntime != nil {
		if err := testRuntime.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "closing the test runtime:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// orphan starts a sandbox, prints its id and waits to be killed, as a
// Spotter process that crashes would.
func orphan() int {
	ctx := context.Background()
	r, err := New(ctx, Config{Agent: os.Args[0], AgentArgs: []string{"agent"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := r.Start(ctx, isolate.Config{Name: "orphan"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(s.ID())
	select {}
}

// One runtime per test binary.
var (
	runtimeOnce sync.Once
	testRuntime *Runtime
	runtimeErr  error
)

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}

// runtimeFor returns the test binary's runtime; it skips t without
// SPOTTER_INTEGRATION=1 and fails it when containerd is missing.
func runtimeFor(t testing.TB) *Runtime {
	t.Helper()
	socket := isolatetest.Socket(t)
	runtimeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		testRuntime, runtimeErr = New(ctx, Config{
			Socket:    socket,
			Agent:     os.Args[0],
			AgentArgs: []string{"agent"},
			Logger:    testLogger(),
		})
	})
	if runtimeErr != nil {
		t.Fatalf("New() = %v", runtimeErr)
	}
	return testRuntime
}

// startSandbox starts a sandbox closed when t ends.
func startSandbox(t testing.TB, cfg isolate.Config) *Sandbox {
	t.Helper()
	r := runtimeFor(t)
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, err := r.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start(%+v) = %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return s
}
