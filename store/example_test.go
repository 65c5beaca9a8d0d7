package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spotter-harness/spotter/store"
)

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "spotter-example-")
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(dir, "spotter.db")) // or "postgres://..."
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	if err := s.CreateSession(ctx, store.Session{ID: "s1", Kind: "agent", Status: store.StatusRunning}); err != nil {
		fmt.Println(err)
		return
	}
	for _, typ := range []string{"text_delta", "tool_call", "tool_result"} {
		e := &store.Event{Session: "s1", Type: typ, Data: json.RawMessage(`{}`)}
		if err := s.AppendEvent(ctx, e); err != nil {
			fmt.Println(err)
			return
		}
	}
	evs, _ := s.Events(ctx, "s1", 1) // what a client that saw seq 1 missed
	for _, e := range evs {
		fmt.Println(e.Seq, e.Type)
	}
	// Output:
	// 2 tool_call
	// 3 tool_result
}
