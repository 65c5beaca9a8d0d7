package web_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/store"
)

// holdStore holds back the write of a batch that holds a tool_result event
// until released.
type holdStore struct {
	store.Store
	held    chan struct{} // receives once a tool_result batch is held
	release chan struct{}
	once    sync.Once
}

func (h *holdStore) WriteAsync(b *store.Batch, done func(error)) {
	for _, e := range b.Events() {
		if e.Type == "tool_result" {
			h.once.Do(func() { close(h.held) })
			go func() {
				<-h.release
				h.Store.WriteAsync(b, done)
			}()
			return
		}
	}
	h.Store.WriteAsync(b, done)
}

// TestExecutorStoredBeforeAnswered checks "stored before sent" on the
// executor API's hot path, where a result's records are stored while its
// answer is encoded: while the store has not stored a call's result, the
// client is not answered; once it has, the answer comes and the store
// holds the tool_result.
func TestExecutorStoredBeforeAnswered(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(t.Context(), filepath.Join(dir, "spotter.db"))
	if err != nil {
		t.Fatalf("store.Open() = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	hs := &holdStore{Store: st, held: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, envOpts{fake: true, data: dir})
	e.stop()
	e.cfg.Store = hs
	e.start()
	id := e.execSession("anthropic", map[string]any{"supervise": "none"})

	type answer struct {
		code int
		a    execAnswer
	}
	answered := make(chan answer, 1)
	go func() {
		code, a := e.execPost("/executor/sessions/"+id+"/call",
			json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`))
		answered <- answer{code, a}
	}()
	<-hs.held
	// The result is held back from the store: no answer may come. (An
	// answer that does not wait for the store comes within a few ms.)
	select {
	case a := <-answered:
		t.Fatalf("the call was answered (%d %s) while its result was not stored", a.code, a.a.Status)
	case <-time.After(500 * time.Millisecond):
	}
	close(hs.release)
	a := <-answered
	if a.code != 200 || a.a.Status != "done" {
		t.Fatalf("POST call = %d %+v, want 200 done", a.code, a.a)
	}
	evs, err := st.Events(context.WithoutCancel(t.Context()), id, 0)
	if err != nil {
		t.Fatalf("Events() = %v", err)
	}
	found := false
	for _, ev := range evs {
		found = found || ev.Type == "tool_result"
	}
	if !found {
		t.Errorf("the store has no tool_result once the call was answered: %d events", len(evs))
	}
}
