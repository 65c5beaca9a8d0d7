package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/spotter-harness/spotter/screen"
)

// TestDeferShotSync checks that a deferred screenshot is whole and named at
// once, that SyncShots returns once each file written since is synced, with
// their errors, and that Close waits for what is left.
func TestDeferShotSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir)
	if err != nil {
		t.Fatalf("Create() = %v", err)
	}
	w.DeferShotSync()
	name, err := w.WriteShot(screen.Shot{Frame: testFrame("f1"), Data: pngSignature})
	if err != nil {
		t.Fatalf("WriteShot() = %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(b, pngSignature) {
		t.Errorf("ReadFile(%s) before SyncShots = %q, %v, want the whole shot", name, b, err)
	}
	if err := w.SyncShots(); err != nil {
		t.Errorf("SyncShots() = %v", err)
	}
	if err := w.SyncShots(); err != nil {
		t.Errorf("SyncShots() with nothing new = %v", err)
	}

	// SyncShots waits for the sync and returns its error.
	release := make(chan struct{})
	var synced atomic.Bool
	w.mu.Lock()
	w.sync = func(name string) error {
		<-release
		synced.Store(true)
		return errors.New("disk gone")
	}
	w.mu.Unlock()
	if _, err := w.WriteShot(screen.Shot{Frame: testFrame("f2"), Data: pngSignature}); err != nil {
		t.Fatalf("WriteShot() = %v", err)
	}
	got := make(chan error, 1)
	go func() { got <- w.SyncShots() }()
	close(release)
	if err := <-got; err == nil || !synced.Load() {
		t.Errorf("SyncShots() = %v, synced %v, want the sync's error after it ran", err, synced.Load())
	}

	w.mu.Lock()
	w.sync = syncFile
	w.mu.Unlock()
	if _, err := w.WriteShot(screen.Shot{Frame: testFrame("f3"), Data: pngSignature}); err != nil {
		t.Fatalf("WriteShot() = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close() with an unsynced shot = %v", err)
	}
}
