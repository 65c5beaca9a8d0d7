package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/store"
)

// testBatch checks that a Batch's writes are stored in order, together,
// with their Seqs set, and that one bad write stores none of them.
func testBatch(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a", "b")

	var b store.Batch
	e1 := &store.Event{Session: "a", Type: "one", Data: payload, Time: at(0)}
	e2 := &store.Event{Session: "a", Type: "two", Time: at(time.Millisecond)}
	m := &store.Message{Session: "a", Role: "tool", Content: json.RawMessage(`"ok"`), CallID: "c1", Time: at(0)}
	sess := newSession("a", at(0))
	sess.Status, sess.Step = store.StatusWaiting, 7
	b.PutToolCall(store.ToolCall{Session: "a", ID: "c1", Name: "computer", Input: payload, Status: store.CallDone,
		Created: at(0), Updated: at(0)})
	b.AppendEvent(e1)
	b.AppendMessage(m)
	b.UpdateSession(sess)
	b.PutShot(store.Shot{Session: "a", Name: "t1/shots/f1.png", FrameID: "f1", Step: 1, Bytes: 10, Time: at(0)})
	b.AppendEvent(e2)
	if b.Len() != 6 {
		t.Errorf("Batch.Len() = %d, want 6", b.Len())
	}
	if err := s.Write(ctx, &b); err != nil {
		t.Fatalf("Write() = %v", err)
	}
	if e1.Seq != 1 || e2.Seq != 2 || m.Seq != 1 {
		t.Errorf("Write() set seqs %d, %d (events), %d (message), want 1, 2, 1", e1.Seq, e2.Seq, m.Seq)
	}
	if evs, err := s.Events(ctx, "a", 0); err != nil || len(evs) != 2 || evs[0].Type != "one" || evs[1].Type != "two" ||
		string(evs[0].Data) != string(payload) {
		t.Errorf("Events(a) after Write() = %v, %v, want one, two", evs, err)
	}
	if got, err := s.Session(ctx, "a"); err != nil || got.Status != store.StatusWaiting || got.Step != 7 {
		t.Errorf("Session(a) after Write() = %+v, %v, want status waiting, step 7", got, err)
	}
	if cs, err := s.ToolCalls(ctx, "a"); err != nil || len(cs) != 1 || cs[0].Status != store.CallDone {
		t.Errorf("ToolCalls(a) after Write() = %v, %v, want c1 done", cs, err)
	}
	if sh, err := s.Shots(ctx, "a"); err != nil || len(sh) != 1 {
		t.Errorf("Shots(a) after Write() = %v, %v, want one", sh, err)
	}
	if ms, err := s.Messages(ctx, "a"); err != nil || len(ms) != 1 {
		t.Errorf("Messages(a) after Write() = %v, %v, want one", ms, err)
	}

	// A write of an unknown session fails the batch: nothing of it is
	// stored and no sequence number is used.
	var bad store.Batch
	eb := &store.Event{Session: "b", Type: "lost"}
	bad.AppendEvent(eb)
	bad.AppendEvent(&store.Event{Session: "nope", Type: "x"})
	if err := s.Write(ctx, &bad); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Write(a batch with session nope) = %v, want ErrNotFound", err)
	}
	if eb.Seq != 0 {
		t.Errorf("a failed Write() set Seq %d, want 0", eb.Seq)
	}
	// So does a write that is invalid as it is added.
	var invalid store.Batch
	invalid.AppendEvent(&store.Event{Session: "b", Type: "lost"})
	invalid.AppendMessage(&store.Message{Session: "b", Role: "user", Content: json.RawMessage(`{`)})
	if err := s.Write(ctx, &invalid); err == nil {
		t.Errorf("Write(a batch with invalid JSON) = nil, want an error")
	}
	done := make(chan error, 1)
	s.WriteAsync(&invalid, func(err error) { done <- err })
	if err := <-done; err == nil {
		t.Errorf("WriteAsync(a batch with invalid JSON) = nil, want an error")
	}
	e := &store.Event{Session: "b", Type: "ok"}
	if err := s.AppendEvent(ctx, e); err != nil || e.Seq != 1 {
		t.Errorf("AppendEvent(b) after failed batches: Seq %d, %v, want 1, nil", e.Seq, err)
	}
	if err := s.Write(ctx, &store.Batch{}); err != nil {
		t.Errorf("Write(empty) = %v", err)
	}
}

// testWriteAsync checks that WriteAsync's done comes once the batch is
// stored, in the order writes were queued, with the seqs set.
func testWriteAsync(t *testing.T, dsn string) {
	ctx := t.Context()
	s := open(t, dsn)
	mustCreate(t, s, "a")
	const n = 40
	var mu sync.Mutex
	var order []int
	var seqs []int64
	var wg sync.WaitGroup
	for i := range n {
		var b store.Batch
		e := &store.Event{Session: "a", Type: "t", Data: json.RawMessage(fmt.Sprint(i))}
		b.AppendEvent(e)
		wg.Add(1)
		s.WriteAsync(&b, func(err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("WriteAsync(%d) = %v", i, err)
			}
			order, seqs = append(order, i), append(seqs, e.Seq)
		})
		if i%10 == 9 {
			// A synchronous write queued after async ones returns
			// after their done.
			if err := s.AppendEvent(ctx, &store.Event{Session: "a", Type: "sync"}); err != nil {
				t.Fatalf("AppendEvent() = %v", err)
			}
			mu.Lock()
			if len(order) != i+1 {
				t.Errorf("AppendEvent() returned with %d of the %d async writes queued before it done", len(order), i+1)
			}
			mu.Unlock()
		}
	}
	wg.Wait()
	if !slices.IsSorted(order) || len(order) != n {
		t.Errorf("WriteAsync done order = %v, want 0..%d", order, n-1)
	}
	if !slices.IsSorted(seqs) || seqs[0] != 1 {
		t.Errorf("WriteAsync seqs = %v, want increasing from 1", seqs)
	}
	// An empty batch is a barrier: done once what was queued is done.
	var stored atomic.Int32
	var b store.Batch
	b.AppendEvent(&store.Event{Session: "a", Type: "last"})
	s.WriteAsync(&b, func(error) { stored.Add(1) })
	barrier := make(chan struct{})
	s.WriteAsync(&store.Batch{}, func(err error) {
		if stored.Load() != 1 {
			t.Errorf("an empty batch's done came before the write queued before it")
		}
		close(barrier)
	})
	<-barrier
	evs, err := s.Events(ctx, "a", 0)
	if err != nil || len(evs) != n+n/10+1 {
		t.Errorf("Events(a) = %d events, %v, want %d", len(evs), err, n+n/10+1)
	}
}

// testCloseMidBatch appends from many goroutines, singly and in batches,
// closes the store while they run, and checks that every write that was
// acknowledged is there after reopening, with gap-free sequences. What
// is queued when Close is called is stored or refused, never lost after
// an acknowledgement.
func testCloseMidBatch(t *testing.T, dsn string) {
	ctx := t.Context()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	const writers = 12
	var ids []string
	for i := range writers {
		ids = append(ids, fmt.Sprintf("w%d", i))
	}
	mustCreate(t, s, ids...)

	var mu sync.Mutex
	acked := map[string][]int64{} // session: acknowledged event seqs
	var count atomic.Int32
	enough := make(chan struct{}) // closed at 100 acknowledged writes
	closing := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			sess := ids[w]
			for i := 0; ; i++ {
				var err error
				var evs []*store.Event
				switch i % 3 {
				case 0:
					e := &store.Event{Session: sess, Type: "single", Data: json.RawMessage(fmt.Sprint(i))}
					err, evs = s.AppendEvent(ctx, e), []*store.Event{e}
				case 1:
					var b store.Batch
					for k := range 3 {
						e := &store.Event{Session: sess, Type: "batch", Data: json.RawMessage(fmt.Sprint(i*10 + k))}
						b.AppendEvent(e)
						evs = append(evs, e)
					}
					b.AppendMessage(&store.Message{Session: sess, Role: "tool", Content: json.RawMessage(`"x"`)})
					err = s.Write(ctx, &b)
				default:
					var b store.Batch
					e := &store.Event{Session: sess, Type: "async", Data: json.RawMessage(fmt.Sprint(i))}
					b.AppendEvent(e)
					evs = []*store.Event{e}
					ch := make(chan error, 1)
					s.WriteAsync(&b, func(err error) { ch <- err })
					err = <-ch
				}
				if err != nil {
					select {
					case <-closing:
						return // refused after Close: not acknowledged
					default:
						t.Errorf("writer %d: write %d before Close = %v", w, i, err)
						return
					}
				}
				mu.Lock()
				for _, e := range evs {
					acked[sess] = append(acked[sess], e.Seq)
				}
				mu.Unlock()
				if count.Add(1) == 100 {
					close(enough)
				}
			}
		})
	}
	<-enough
	close(closing)
	if err := s.Close(); err != nil {
		t.Errorf("Close() while writing = %v", err)
	}
	wg.Wait()

	s = open(t, dsn)
	total := 0
	for _, sess := range ids {
		evs, err := s.Events(ctx, sess, 0)
		if err != nil {
			t.Fatalf("Events(%s) after Close and Open = %v", sess, err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("Events(%s)[%d].Seq = %d: a gap or a duplicate", sess, i, e.Seq)
			}
		}
		mu.Lock()
		want := acked[sess]
		mu.Unlock()
		total += len(want)
		for _, seq := range want {
			if seq < 1 || seq > int64(len(evs)) {
				t.Errorf("session %s: acknowledged event %d is lost (%d stored)", sess, seq, len(evs))
			}
		}
	}
	if total == 0 {
		t.Errorf("no write was acknowledged before Close")
	}
	t.Logf("%d events acknowledged before Close, all stored", total)
}
