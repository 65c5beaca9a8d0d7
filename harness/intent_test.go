package harness_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// orderDisplay is a Fake that logs each action it performs beside the
// intents recorded, in one order.
type orderDisplay struct {
	*screentest.Fake
	mu  *sync.Mutex
	log *[]string
}

func (d orderDisplay) Perform(ctx context.Context, m screen.Mapped) error {
	d.mu.Lock()
	*d.log = append(*d.log, "perform "+m.Kind.String())
	d.mu.Unlock()
	return d.Fake.Perform(ctx, m)
}

// The intent of a call is recorded once, before its first action that acts
// on the display, and not for calls that only look (screenshot, wait,
// zoom); a failure to record it performs nothing.
func TestIntentBeforePerform(t *testing.T) {
	var mu sync.Mutex
	var log []string
	d := orderDisplay{&screentest.Fake{}, &mu, &log}
	fail := false
	e, err := harness.NewExecutor(harness.ExecutorConfig{Display: d, Policy: permissive,
		OnIntent: func(_ context.Context, id string) error {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, "intent "+id)
			if fail {
				return errors.New("disk full")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	e.Screenshot(ctx, harness.ActorModel)
	look := e.Do(ctx, harness.Call{ID: "look", Actions: []actions.Action{{Kind: actions.Screenshot},
		{Kind: actions.Wait, Duration: 1}}}, harness.Options{})
	act := e.Do(ctx, harness.Call{ID: "act", Actions: []actions.Action{{Kind: actions.Wait, Duration: 1}, click(10, 10),
		typing("hi")}}, harness.Options{})
	if look.Err != nil || act.Err != nil || act.Ran != 3 {
		t.Fatalf("calls = %v, %v (ran %d)", look.Err, act.Err, act.Ran)
	}
	want := []string{"intent act", "perform click", "perform type"}
	if !slices.Equal(log, want) {
		t.Errorf("intents and actions = %q, want %q", log, want)
	}
	fail, log = true, nil
	r := e.Do(ctx, harness.Call{ID: "nope", Actions: []actions.Action{click(10, 10)}}, harness.Options{})
	if r.Err == nil || r.Ran != 0 || r.Shot == nil || !slices.Equal(log, []string{"intent nope"}) {
		t.Errorf("a call whose intent could not be recorded = err %v, ran %d, shot %v, log %q; want it refused, nothing performed, a screenshot",
			r.Err, r.Ran, r.Shot != nil, log)
	}
}

// A resumed run does not perform again a call whose intent was recorded
// without a result: the model gets ErrOutcomeUnknown with a fresh
// screenshot; the calls of the turn that had not begun run.
func TestResumeBegunNotPerformedAgain(t *testing.T) {
	d := &screentest.Fake{}
	m := &turnsModel{}
	turn := harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{
		{ID: "buy", Name: "computer", Actions: []actions.Action{click(10, 10)}},
		{ID: "next", Name: "computer", Actions: []actions.Action{click(20, 20)}},
	}}
	var intents []string
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Policy: permissive,
		Resume: &harness.Resume{Step: 1, Turn: turn, Begun: []string{"buy"},
			Frames: []screen.Frame{{ID: "f0001", Viewport: screen.Size{W: 100, H: 100}, Sent: screen.Size{W: 100, H: 100},
				Capture: screen.Size{W: 100, H: 100}, DPR: 1}}},
		OnIntent: func(_ context.Context, id string) error { intents = append(intents, id); return nil }})
	if err != nil || out.Stop != harness.StopEndTurn {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	if got := d.Performed(); len(got) != 1 || got[0].At != actions.Pt(20.5, 20.5) {
		t.Errorf("performed %+v, want only the call that had not begun", got)
	}
	if !slices.Equal(intents, []string{"next"}) {
		t.Errorf("intents recorded on resume = %q, want [next]", intents)
	}
	rs := m.got[0].Results
	if len(rs) != 2 || !errors.Is(rs[0].Err, harness.ErrOutcomeUnknown) || rs[0].Shot == nil || rs[0].Ran != 0 ||
		rs[1].Err != nil || rs[1].Ran != 1 {
		t.Errorf("results sent to the model = %+v, want buy's outcome unknown with a screenshot, next done", rs)
	}
}
