package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/store"
)

// browsersUnder counts the Chromium browser processes (not their
// renderers or helpers) that descend from this process.
func browsersUnder(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parent, browser := map[int]int{}, map[int]bool{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		parent[p], _ = strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(cmd), "\x00")
		browser[p] = strings.HasPrefix(args[0], "/usr/lib/chromium/") && !strings.Contains(string(cmd), "--type=")
	}
	n, self := 0, os.Getpid()
	for p := range browser {
		if !browser[p] {
			continue
		}
		for q, hops := parent[p], 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == self {
				n++
				break
			}
		}
	}
	return n
}

// A flood of sessions, each with a Chromium of its own, past MaxSessions:
// as many browsers start as the bound allows, the rest are refused with
// ErrTooManySessions before any browser starts, and stopping the sessions
// closes every browser.
func TestMaxSessionsChromium(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("SPOTTER_INTEGRATION=1 floods real Chromium browsers")
	}
	const max, n = 3, 8
	dir := t.TempDir()
	st, err := store.Open(t.Context(), filepath.Join(dir, "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := New(Config{Store: st, Dir: filepath.Join(dir, "sessions"), MaxSessions: max,
		NewDisplay: func(ctx context.Context, s Spec) (Display, error) {
			return cdp.Open(ctx, cdp.Config{Viewport: s.Display.Size(), DPR: s.Display.DPR})
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	before := browsersUnder(t)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		sessions []*Session
		refused  int
	)
	for range n {
		wg.Go(func() {
			s, err := m.Create(t.Context(), KindExecutor, Spec{Provider: "anthropic"}, "test")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrTooManySessions):
				refused++
			case err != nil:
				t.Errorf("Create = %v", err)
			default:
				sessions = append(sessions, s)
			}
		})
	}
	wg.Wait()
	if len(sessions) != max || refused != n-max {
		t.Fatalf("%d sessions at once under MaxSessions %d: %d created, %d refused", n, max, len(sessions), refused)
	}
	if got := browsersUnder(t) - before; got != max {
		t.Errorf("browsers running = %d, want %d", got, max)
	}
	for _, s := range sessions {
		if _, err := s.First(t.Context()); err != nil {
			t.Errorf("First() = %v", err)
		}
		if err := s.Stop(t.Context(), "test"); err != nil {
			t.Errorf("Stop() = %v", err)
		}
	}
	// Stop returns once the display is closed; the processes exit a
	// moment later.
	deadline := time.Now().Add(30 * time.Second)
	for browsersUnder(t) > before && time.Now().Before(deadline) {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
		}
	}
	if got := browsersUnder(t) - before; got != 0 {
		t.Errorf("browsers running after every session stopped = %d, want 0", got)
	}
	if open, _ := m.Open(); open != 0 {
		t.Errorf("Open() = %d, want 0", open)
	}
}
