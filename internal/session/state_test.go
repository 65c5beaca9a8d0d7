package session

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// TestStateJSON checks that the session's state, encoded from the kept
// encodings of its frames and answered calls, reads back as the state
// itself, as the frames and the calls change from one save to the next.
func TestStateJSON(t *testing.T) {
	frame := func(i int) screen.Frame {
		return screen.Frame{ID: fmt.Sprintf("f%04d", i), Time: time.Date(2026, 11, 26, 8, 0, i, 0, time.UTC),
			URL: "https://shop.test/", Viewport: screen.Size{W: 1280, H: 800}, DPR: 1,
			Clip:    actions.Rect{Max: actions.Pt(1280, 800)},
			Capture: screen.Size{W: 1280, H: 800}, Sent: screen.Size{W: 1280, H: 800}, Format: screen.PNG,
			Settle: screen.Settle{Waited: time.Duration(i) * time.Millisecond}}
	}
	answered := func(i int) savedExecCall {
		return savedExecCall{
			Call: savedCall{ID: fmt.Sprintf("c%d", i), Name: "computer", Raw: json.RawMessage(`{"id":"c` + fmt.Sprint(i) + `"}`),
				Hash: fmt.Sprintf("%064x", i), SafetyChecks: []harness.SafetyCheck{{ID: "s", Code: "malicious_instructions"}}},
			Actions: 2,
			Result: savedResult{CallID: fmt.Sprintf("c%d", i), Ran: 2, Notes: []string{"a <note> & more"},
				Shot: fmt.Sprintf("t1/shots/f%04d.png", i), Frame: frame(i), Cursor: &actions.Point{X: 3, Y: 4}}}
	}
	// want is the state as encoding/json writes it, the exec calls given.
	check := func(t *testing.T, s *Session, exec []savedExecCall) {
		t.Helper()
		ref := s.saved
		ref.Exec = exec
		want, err := json.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.stateJSON()
		if err != nil {
			t.Fatalf("stateJSON: %v", err)
		}
		if !json.Valid(got) {
			t.Fatalf("stateJSON = %s, not JSON", got)
		}
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("stateJSON =\n%s\nwant (field order aside)\n%s", got, want)
		}
		var back savedState
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("read back: %v", err)
		}
	}

	t.Run("empty", func(t *testing.T) {
		s := &Session{}
		check(t, s, nil)
		if got, _ := s.stateJSON(); string(got) != `{"runs":0}` {
			t.Errorf("stateJSON of an empty state = %s", got)
		}
	})

	t.Run("frames", func(t *testing.T) {
		s := &Session{saved: savedState{Task: "buy <it>", Runs: 2, FrameSeq: 9, Takeover: &savedTakeover{By: "ann"},
			Run: &savedRun{Dir: "t2", Step: 3, Turn: savedTurn{Text: "ok", Calls: []savedCall{{ID: "a", Name: "computer"}}}}}}
		check(t, s, nil)
		for i := range 5 * maxFrames {
			s.saved.Frames = append(s.saved.Frames, frame(i))
			if len(s.saved.Frames) > maxFrames {
				s.saved.Frames = s.saved.Frames[1:]
			}
			if i == 7 {
				// A frame encoded before changes one field (same id):
				// it is another frame.
				s.saved.Frames[0].Settle.TimedOut = true
			}
			check(t, s, nil)
		}
		if n := len(s.frameJSON); n > 2*maxFrames {
			t.Errorf("%d frame encodings kept, want at most %d", n, 2*maxFrames)
		}
		// A state read back from the store: no exec model.
		s.saved.Exec = []savedExecCall{answered(1)}
		check(t, s, s.saved.Exec)
	})

	t.Run("executor", func(t *testing.T) {
		s := &Session{exec: newExecModel()}
		check(t, s, nil)
		var all []savedExecCall
		for i := range MaxRetainedCalls + 3 {
			sc := answered(i)
			if i == 2 {
				sc.Result.Err, sc.Result.Shot, sc.Result.Frame = "boom", "", screen.Frame{}
			}
			s.exec.restoreAnswered(sc)
			all = append(all, sc)
			s.saved.Frames = append(s.saved.Frames, frame(i))
			check(t, s, all[max(0, len(all)-MaxRetainedCalls):])
		}
		// The screenshot's file of a kept call changes: so does its record.
		last := &all[len(all)-1]
		last.Result.Shot = "t1/shots/other.png"
		s.exec.noteShot(last.Call.ID, last.Result.Shot)
		check(t, s, all[len(all)-MaxRetainedCalls:])
	})
}
