package store

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// TestGroupCommit checks that writes made at the same time share
// transactions: 16 goroutines appending 20 events each need fewer
// transactions than writes.
func TestGroupCommit(t *testing.T) {
	ctx := t.Context()
	d, err := openSQLite(ctx, filepath.Join(t.TempDir(), "spotter.db"))
	if err != nil {
		t.Fatalf("openSQLite() = %v", err)
	}
	defer d.Close()
	if err := d.CreateSession(ctx, Session{ID: "s", Kind: "agent", Status: StatusRunning}); err != nil {
		t.Fatalf("CreateSession() = %v", err)
	}
	g0, w0 := d.c.groups.Load(), d.c.writes.Load()
	const goroutines, each = 16, 20
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				if err := d.AppendEvent(ctx, &Event{Session: "s", Type: "x"}); err != nil {
					t.Errorf("AppendEvent() = %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	groups, writes := d.c.groups.Load()-g0, d.c.writes.Load()-w0
	if writes != goroutines*each {
		t.Errorf("%d writes went through the committer, want %d", writes, goroutines*each)
	}
	if groups >= writes {
		t.Errorf("%d writes took %d transactions: none shared one", writes, groups)
	}
	t.Logf("%d writes in %d transactions", writes, groups)
}

// TestWriteAbandoned checks that a write whose context ends while it waits
// in the queue is not run.
func TestWriteAbandoned(t *testing.T) {
	ctx := t.Context()
	d, err := openSQLite(ctx, filepath.Join(t.TempDir(), "spotter.db"))
	if err != nil {
		t.Fatalf("openSQLite() = %v", err)
	}
	defer d.Close()
	if err := d.CreateSession(ctx, Session{ID: "s", Kind: "agent", Status: StatusRunning}); err != nil {
		t.Fatalf("CreateSession() = %v", err)
	}
	// Hold the committer in a done func, queue a write behind it, and
	// cancel that write's context while it waits.
	hold, held := make(chan struct{}), make(chan struct{})
	d.WriteAsync(&Batch{}, func(error) {
		close(held)
		<-hold
	})
	<-held
	wctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { res <- d.AppendEvent(wctx, &Event{Session: "s", Type: "abandoned"}) }()
	for {
		d.c.mu.Lock()
		n := len(d.c.queue)
		d.c.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-res; err == nil {
		t.Errorf("AppendEvent(cancelled while queued) = nil, want an error")
	}
	close(hold)
	e := &Event{Session: "s", Type: "next"}
	if err := d.AppendEvent(ctx, e); err != nil || e.Seq != 1 {
		t.Errorf("AppendEvent() after an abandoned write: Seq %d, %v, want 1, nil", e.Seq, err)
	}
}
