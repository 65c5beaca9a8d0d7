package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// A click whose process stops between performing it and storing its
// result (here a shutdown that cancels the run right after the click ran,
// which records nothing, as kill -9 would) is not performed again when
// the session resumes: the model is told the outcome is unknown, with a
// fresh screenshot.
func TestResumeDoesNotRepeatABegunCall(t *testing.T) {
	e := newBoundsEnv(t, t.TempDir(), 0)
	performing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.disps.hook = func(m screen.Mapped) error {
		if m.Kind == actions.Click {
			once.Do(func() { close(performing) })
			<-release
		}
		return nil
	}
	e.withModel(modelFunc(func(ctx context.Context, in harness.Input) (harness.Turn, error) {
		return harness.Turn{Text: "Buying.", Stop: harness.StopToolUse, Calls: []harness.Call{{ID: "buy", Name: "computer",
			Actions: []actions.Action{{Kind: actions.Click, HasAt: true, At: actions.Pt(10, 10)}}}}}, nil
	}))
	s, err := e.m.Create(t.Context(), KindAgent, Spec{Model: ModelSpec{Provider: "anthropic"}, Approvals: ApprovalSpec{Supervise: "none"},
		Messages: []InMessage{{Role: "user", Content: json.RawMessage(`"buy it"`)}}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	<-performing
	first := e.disps.last()
	closed := make(chan error, 1)
	go func() { closed <- e.m.Close(context.Background()) }()
	for e.m.base.Err() == nil { // the shutdown has begun: nothing the run does now is recorded
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(first.Performed()); n != 2 { // the start page, the click
		t.Fatalf("the first display performed %d actions, want the start page and the click", n)
	}

	var results []harness.Result
	e2 := &boundsEnv{t: t, dir: e.dir, st: e.st, disps: &fakes{}}
	m, err := New(Config{Store: e.st, Dir: filepath.Join(e.dir, "sessions"), ApprovalTimeout: time.Hour, NewDisplay: e2.disps.open})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	e2.m = m
	e2.withModel(modelFunc(func(ctx context.Context, in harness.Input) (harness.Turn, error) {
		results = append(results, in.Results...)
		return harness.Turn{Text: "I will look first.", Stop: harness.StopEndTurn}, nil
	}))
	if err := m.Restore(t.Context()); err != nil {
		t.Fatalf("Restore() = %v", err)
	}
	s2, err := m.Get(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if ts := lastStop(t, s2); ts.StopReason != StopEndTurn {
		t.Fatalf("turn_stop after the restart = %+v, want end_turn", ts)
	}
	if len(results) != 1 || results[0].CallID != "buy" || !errors.Is(results[0].Err, harness.ErrOutcomeUnknown) || results[0].Shot == nil {
		t.Errorf("results the model got after the restart = %+v, want buy's outcome unknown, with a screenshot", results)
	}
	for _, a := range e2.disps.last().Performed() {
		if a.Kind == actions.Click {
			t.Errorf("the click ran again after the restart: %+v", e2.disps.last().Performed())
		}
	}
}
