package store_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/store"
)

// groupCrashEnv names the database a child of TestSQLiteCrashMidGroup
// writes to.
const groupCrashEnv = "SPOTTER_STORE_GROUP_CRASH_CHILD"

// groupWriters is how many goroutines of the child write at once, each to a
// session of its own, so that their writes share group transactions.
const groupWriters = 16

// TestSQLiteCrashMidGroup kills a process with SIGKILL while 16 of its
// goroutines write at once (single appends, batches and queued batches,
// sharing group transactions), and checks that every write it
// acknowledged survived, whole: a batch's three events are all there or
// none is, and each session's events are gap-free.
func TestSQLiteCrashMidGroup(t *testing.T) {
	if path := os.Getenv(groupCrashEnv); path != "" {
		groupCrashChild(path)
		return
	}
	ctx := t.Context()
	path := sqliteDSN(t)
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	for w := range groupWriters {
		if err := s.CreateSession(ctx, store.Session{ID: fmt.Sprintf("w%d", w), Kind: "agent", Status: store.StatusRunning}); err != nil {
			t.Fatalf("CreateSession() = %v", err)
		}
	}
	s.Close()

	for round := range 2 {
		acked := groupCrashRound(t, path, 400)
		s, err := store.Open(ctx, path)
		if err != nil {
			t.Fatalf("round %d: Open() after kill -9 = %v", round, err)
		}
		stored := 0
		for w := range groupWriters {
			sess := fmt.Sprintf("w%d", w)
			evs, err := s.Events(ctx, sess, 0)
			if err != nil {
				t.Fatalf("round %d: Events(%s) = %v", round, sess, err)
			}
			stored += len(evs)
			byData := map[string]bool{}
			for i, e := range evs {
				if e.Seq != int64(i+1) {
					t.Fatalf("round %d: session %s event %d has seq %d: a gap or a duplicate", round, sess, i, e.Seq)
				}
				byData[string(e.Data)] = true
			}
			// A batch's events are stored together or not at all.
			for d := range byData {
				var v struct {
					N, K int
				}
				if json.Unmarshal([]byte(d), &v) != nil || v.K < 0 {
					continue
				}
				for k := range 3 {
					if !byData[fmt.Sprintf(`{"n":%d,"k":%d}`, v.N, k)] {
						t.Errorf("round %d: session %s: batch %d stored without its event %d", round, sess, v.N, k)
					}
				}
			}
			for _, d := range acked[sess] {
				if !byData[d] {
					t.Errorf("round %d: session %s: acknowledged write %s lost after kill -9", round, sess, d)
				}
			}
		}
		s.Close()
		n := 0
		for _, a := range acked {
			n += len(a)
		}
		t.Logf("round %d: %d writes acknowledged, %d events stored", round, n, stored)
		var check string
		if err := rawSQLite(t, path).QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
			t.Fatalf("round %d: PRAGMA integrity_check = %q, %v, want ok", round, check, err)
		}
	}
}

// groupCrashRound runs a child, SIGKILLs it once it has acknowledged n
// writes, and returns what it acknowledged: per session, the data of an
// event of each acknowledged write.
func groupCrashRound(t *testing.T, path string, n int) map[string][]string {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSQLiteCrashMidGroup$", "-test.count=1")
	cmd.Env = append(os.Environ(), groupCrashEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	acked := map[string][]string{}
	count := 0
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "acked" {
			continue // the test framework's own output
		}
		acked[f[1]] = append(acked[f[1]], f[2])
		count++
		if count == n && !killed {
			// Lines still in the pipe were acknowledged too: read on.
			cmd.Process.Kill()
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended after %d acknowledgements, before the kill: %v", count, err)
	}
	return acked
}

// groupCrashChild writes from groupWriters goroutines until it is killed,
// printing "acked <session> <data>" for each acknowledged write.
func groupCrashChild(path string) {
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ack := func(sess, data string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "acked %s %s\n", sess, data)
		out.Flush()
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	start := time.Now().UnixNano() // each run's data differs from the last's
	var wg sync.WaitGroup
	for w := range groupWriters {
		wg.Go(func() {
			sess := fmt.Sprintf("w%d", w)
			for i := 0; i < 100000; i++ {
				id := start/1000 + int64(i)
				switch i % 3 {
				case 0:
					d := fmt.Sprintf(`{"n":%d,"k":-1}`, id)
					if err := s.AppendEvent(ctx, &store.Event{Session: sess, Type: "single", Data: json.RawMessage(d)}); err != nil {
						fail(err)
					}
					ack(sess, d)
				case 1:
					var b store.Batch
					for k := range 3 {
						b.AppendEvent(&store.Event{Session: sess, Type: "batch", Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"k":%d}`, id, k))})
					}
					if err := s.Write(ctx, &b); err != nil {
						fail(err)
					}
					ack(sess, fmt.Sprintf(`{"n":%d,"k":2}`, id))
				default:
					var b store.Batch
					d := fmt.Sprintf(`{"n":%d,"k":-2}`, id)
					b.AppendEvent(&store.Event{Session: sess, Type: "async", Data: json.RawMessage(d)})
					ch := make(chan error, 1)
					s.WriteAsync(&b, func(err error) { ch <- err })
					if err := <-ch; err != nil {
						fail(err)
					}
					ack(sess, d)
				}
			}
		})
	}
	wg.Wait()
	os.Exit(3) // never killed: the parent fails
}
