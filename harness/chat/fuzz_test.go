package chat_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/screen"
)

// uitarsSeeds are realistic UI-TARS replies, good and bad.
var uitarsSeeds = []string{
	"Thought: The search box is at the top.\nAction: click(start_box='<|box_start|>(640,52)<|box_end|>')",
	"Thought: Click the link.\nAction: click(start_box='(235,512)')",
	"Thought: I'll press it.\nAction:   click( start_box = \"<|box_start|>( 235 , 512 )<|box_end|>\" )",
	"Action: click(start_box='<|box_start|>(100,200,301,250)<|box_end|>')",
	"Thought: test\nAction: click(point='<point>200 300</point>')",
	"Action: drag(start_point='<point>1 2</point>', end_point='<point>3 4</point>')",
	"Thought: Copy.\nAction: hotkey(key='ctrl c')\n\nhotkey(key='ctrl+shift+t')\n\npress(key='space')",
	`Action: type(content='He said \"hi\" and it\'s fine\n')`,
	"Action: type(content='I'm here\\nC:\\Users\\\\me')",
	"Thought: Down.\nAction: scroll(start_box='<|box_start|>(640,400)<|box_end|>', direction='down')\n\nscroll(direction='left')",
	"Thought: Loading.\nAction: wait()",
	"Thought: Done.\nAction: finished(content='The price is \\'$5\\'.')",
	"Thought: Submit and stop.\nAction: hotkey(key='enter')\n\nfinished()",
	"Thought: A captcha.\nAction: call_user()",
	"Reflection: Missed.\nAction_Summary: Click blue.\nAction: click(start_box='(5,6)')",
	"```\nThought: Fenced.\nAction： click(start_box='(7,8)')\n```",
	"Thought: hmm\nAction: click(start_box='(abc,12)')",
	"Action: type(content='hello",
	"Action: click(start_box='(1,2)')\nThis should open the menu.",
	"Action: click(start_box='(1e308,1e308,1e308,1e308)')",
	"Action: scroll(direction=down\n)",
	"I cannot see the page.",
}

func FuzzParseUITARS(f *testing.F) {
	for _, s := range uitarsSeeds {
		f.Add(s)
	}
	limits := actions.Limits{MaxText: 1 << 30, MaxBatch: 1 << 30}
	f.Fuzz(func(t *testing.T, text string) {
		for _, space := range []screen.Space{resized, screen.Grid1000} {
			r, err := chat.ParseUITARS(text, space)
			if err != nil {
				if !errors.Is(err, actions.ErrInvalid) {
					t.Fatalf("ParseUITARS(%q) error = %v, want it to wrap actions.ErrInvalid", text, err)
				}
				continue
			}
			if len(r.Actions) == 0 && !r.Finished {
				t.Fatalf("ParseUITARS(%q) = %+v: no actions, not finished, no error", text, r)
			}
			for i, a := range r.Actions {
				if err := a.Validate(limits); err != nil {
					t.Fatalf("ParseUITARS(%q) action %d = %+v does not validate: %v", text, i, a, err)
				}
				// What FormatUITARS can write, ParseUITARS reads back.
				s, err := chat.FormatUITARS(a)
				if err != nil {
					continue
				}
				back, err := chat.ParseUITARS("Action: "+s, space)
				if err != nil {
					t.Fatalf("ParseUITARS(FormatUITARS(%+v) = %q) error: %v", a, s, err)
				}
				if diff := cmp.Diff([]actions.Action{a}, back.Actions); diff != "" {
					t.Fatalf("ParseUITARS(FormatUITARS(%+v) = %q) (-want +got):\n%s", a, s, diff)
				}
			}
		}
	})
}

func FuzzDecodeArguments(f *testing.F) {
	for _, s := range []string{
		`{"type":"click","x":10,"y":20}`,
		`{"type":"click","x":10,"y":20,"button":"right","keys":["CTRL"]}`,
		`{"actions":[{"type":"type","text":"kittens"},{"type":"keypress","keys":["ENTER"]}]}`,
		`{"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}]}`,
		`{"type":"scroll","x":5,"y":6,"scroll_x":0,"scroll_y":-300}`,
		`{"type":"hold_key","keys":["SHIFT"],"duration_ms":250}`,
		`{"type":"zoom","x1":0,"y1":0,"x2":2,"y2":2}`,
		`{"type":"navigate","url":"https://example.com/"}`,
		`{"type":"wait","duration_ms":1500}`,
		`{"action":"double_click","x":5,"y":6}`,
		`{"action":{"type":"move","x":5,"y":6}}`,
		`{"type": "click", "x": 1`,
		`{"type":"fly"}`,
		`{"type":"click","actions":[]}`,
		`[1,2]`,
		``,
		`"click"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		as, err := chat.DecodeArguments(args)
		if err != nil {
			if !errors.Is(err, actions.ErrInvalid) {
				t.Fatalf("DecodeArguments(%q) error = %v, want it to wrap actions.ErrInvalid", args, err)
			}
			return
		}
		if len(as) == 0 {
			t.Fatalf("DecodeArguments(%q) = no actions and no error", args)
		}
		for i, a := range as {
			raw, err := openai.EncodeAction(a)
			if err != nil {
				t.Fatalf("DecodeArguments(%q) action %d = %+v cannot be encoded: %v", args, i, a, err)
			}
			back, err := chat.DecodeArguments(string(raw))
			if err != nil {
				t.Fatalf("DecodeArguments(EncodeAction(%+v) = %s) error: %v", a, raw, err)
			}
			if diff := cmp.Diff([]actions.Action{a}, back); diff != "" {
				t.Fatalf("DecodeArguments(EncodeAction(%+v) = %s) (-want +got):\n%s", a, raw, diff)
			}
		}
	})
}
