package mcp

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/harness"
)

// closed reports whether display i of f was closed.
func (f *fixture) closed(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.displays[i]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// waitClosed waits until display i of f is closed, or fails t at the
// deadline, and returns how long it waited.
func (f *fixture) waitClosed(t *testing.T, i int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	f.mu.Lock()
	gone := f.displays[i].gone
	f.mu.Unlock()
	select {
	case <-gone:
	case <-time.After(within):
		t.Fatalf("display %d still open after %v", i, within)
	}
	return time.Since(start)
}

// A session nobody calls is closed after the idle timeout, its display
// released; a call keeps it open, and so does a call waiting for an
// approval, however long.
func TestIdleSessionsClose(t *testing.T) {
	const idle = 300 * time.Millisecond
	release := make(chan struct{})
	f := newFixtureWith(t, approverFunc(func(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
		if r.Action.Kind.String() == "click" {
			select {
			case <-release:
			case <-ctx.Done():
				return harness.Decision{}, ctx.Err()
			}
		}
		return harness.Decision{}, nil
	}), func(c *Config) { c.IdleTimeout = idle })
	cs := f.connect(t, "memory")
	call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
	// A click that waits for its approval for three idle timeouts.
	done := make(chan string, 1)
	go func() {
		_, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"x": 1, "y": 1}})
		done <- errText
	}()
	f.mu.Lock()
	gone := f.displays[0].gone
	f.mu.Unlock()
	select {
	case <-gone:
		t.Fatal("the session closed while a call waited for its approval")
	case <-time.After(3 * idle): // three idle timeouts pass with the call waiting
	}
	close(release)
	if errText := <-done; errText != "" {
		t.Fatalf("the approved click: %s", errText)
	}
	took := f.waitClosed(t, 0, 20*idle)
	t.Logf("idle session closed %v after its last call (idle timeout %v)", took, idle)
	if took < idle*3/4 {
		t.Errorf("session closed %v after its last call, before the idle timeout %v", took, idle)
	}
	_, _, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot", "session": "s1"})
	if !strings.Contains(errText, "no such session") {
		t.Errorf("a call naming the closed session: %q, want no such session", errText)
	}
}

// approverFunc is a harness.Approver.
type approverFunc func(context.Context, harness.ApprovalRequest) (harness.Decision, error)

func (f approverFunc) Approve(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
	return f(ctx, r)
}

// A streamable HTTP client's DELETE (its Close) ends its connection and
// closes every session it opened at once; another client's sessions stay.
func TestDeleteClosesTheClientsSessions(t *testing.T) {
	f := newFixture(t, nil)
	hs := httptest.NewServer(f.srv.Handler())
	t.Cleanup(hs.Close)
	connect := func() *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	a, b := connect(), connect()
	defer b.Close()
	call(t, a, ToolComputer, map[string]any{"kind": "screenshot"}) // display 0: a's default
	call(t, a, ToolOpenSession, nil)                               // display 1: a's own
	call(t, b, ToolComputer, map[string]any{"kind": "screenshot"}) // display 2: b's default
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	f.waitClosed(t, 0, 10*time.Second)
	f.waitClosed(t, 1, 10*time.Second)
	if f.closed(2) {
		t.Error("another client's session closed with the first client's connection")
	}
}

// A connection that sends nothing for the idle timeout is closed, with
// its sessions, without a DELETE.
func TestIdleConnectionCloses(t *testing.T) {
	f := newFixtureWith(t, nil, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	cs := f.connect(t, "http")
	call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
	took := f.waitClosed(t, 0, 10*time.Second)
	t.Logf("the vanished client's session closed %v after its last call", took)
}
