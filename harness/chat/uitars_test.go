package chat_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/screen"
)

// resized is UI-TARS 1.5's space for a 1280x800 screenshot.
var resized = screen.Space{Kind: screen.ResizedSpace, Resized: screen.SmartResize(screen.Size{W: 1280, H: 800})}

func TestSmartResizeOf1280x800(t *testing.T) {
	if got, want := resized.Resized, (screen.Size{W: 1288, H: 812}); got != want {
		t.Fatalf("SmartResize(1280x800) = %v, want %v", got, want)
	}
}

func click(x, y float64) actions.Action {
	return actions.Action{Kind: actions.Click, At: actions.Pt(x, y), HasAt: true}
}

func TestParseUITARS(t *testing.T) {
	enter := actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"Enter"}}
	tests := []struct {
		name string
		in   string
		want chat.UITARSReply
	}{
		{
			name: "click with box tokens",
			in:   "Thought: The search box is at the top of the page.\nAction: click(start_box='<|box_start|>(640,52)<|box_end|>')",
			want: chat.UITARSReply{Thought: "The search box is at the top of the page.",
				Action: "click(start_box='<|box_start|>(640,52)<|box_end|>')", Actions: []actions.Action{click(640, 52)}},
		},
		{
			name: "box tokens stripped by the server",
			in:   "Thought: Click the link.\nAction: click(start_box='(235,512)')",
			want: chat.UITARSReply{Thought: "Click the link.", Action: "click(start_box='(235,512)')",
				Actions: []actions.Action{click(235, 512)}},
		},
		{
			name: "odd spacing and double quotes",
			in:   "Thought:   I'll press it.  \n\nAction:   click( start_box = \"<|box_start|>( 235 , 512 )<|box_end|>\" )  ",
			want: chat.UITARSReply{Thought: "I'll press it.", Action: `click( start_box = "<|box_start|>( 235 , 512 )<|box_end|>" )`,
				Actions: []actions.Action{click(235, 512)}},
		},
		{
			name: "four-number box clicks the centre",
			in:   "Thought: The OK button.\nAction: click(start_box='<|box_start|>(100,200,301,250)<|box_end|>')",
			want: chat.UITARSReply{Thought: "The OK button.", Action: "click(start_box='<|box_start|>(100,200,301,250)<|box_end|>')",
				Actions: []actions.Action{click(200.5, 225)}},
		},
		{
			name: "point form",
			in:   "Thought: test\nAction: click(point='<point>200 300</point>')",
			want: chat.UITARSReply{Thought: "test", Action: "click(point='<point>200 300</point>')", Actions: []actions.Action{click(200, 300)}},
		},
		{
			name: "bbox form",
			in:   "Thought: test\nAction: click(start_box='<bbox>637 964 639 966</bbox>')",
			want: chat.UITARSReply{Thought: "test", Action: "click(start_box='<bbox>637 964 639 966</bbox>')", Actions: []actions.Action{click(638, 965)}},
		},
		{
			name: "unquoted box",
			in:   "Action: click(start_box=<|box_start|>(10,20)<|box_end|>)",
			want: chat.UITARSReply{Action: "click(start_box=<|box_start|>(10,20)<|box_end|>)", Actions: []actions.Action{click(10, 20)}},
		},
		{
			name: "double, right and hover",
			in: "Thought: Open it.\nAction: left_double(start_box='(10,20)')\n\nright_single(start_box='(30,40)')\n\n" +
				"hover(start_box='(50.5,60)')\n\nleft_single(start_box='(1,2)')",
			want: chat.UITARSReply{Thought: "Open it.",
				Action: "left_double(start_box='(10,20)')\n\nright_single(start_box='(30,40)')\n\nhover(start_box='(50.5,60)')\n\nleft_single(start_box='(1,2)')",
				Actions: []actions.Action{
					{Kind: actions.DoubleClick, At: actions.Pt(10, 20), HasAt: true},
					{Kind: actions.Click, At: actions.Pt(30, 40), HasAt: true, Button: actions.Right},
					{Kind: actions.Move, At: actions.Pt(50.5, 60), HasAt: true},
					click(1, 2),
				}},
		},
		{
			name: "drag, and drag with point names",
			in: "Thought: Move the slider.\nAction: drag(start_box='<|box_start|>(100,500)<|box_end|>', end_box='<|box_start|>(400,500)<|box_end|>')\n\n" +
				"Action: drag(start_point='<point>1 2</point>', end_point='<point>3 4</point>')",
			want: chat.UITARSReply{Thought: "Move the slider.",
				Action: "drag(start_box='<|box_start|>(100,500)<|box_end|>', end_box='<|box_start|>(400,500)<|box_end|>')\n\n" +
					"Action: drag(start_point='<point>1 2</point>', end_point='<point>3 4</point>')",
				Actions: []actions.Action{
					{Kind: actions.Drag, Path: []actions.Point{actions.Pt(100, 500), actions.Pt(400, 500)}},
					{Kind: actions.Drag, Path: []actions.Point{actions.Pt(1, 2), actions.Pt(3, 4)}},
				}},
		},
		{
			name: "hotkeys",
			in:   "Thought: Copy, new tab, submit.\nAction: hotkey(key='ctrl c')\n\nhotkey(key='Ctrl Shift T')\n\nhotkey(key='enter')\n\nhotkey(key='arrowdown')\n\npress(key='space')\n\nhotkey(key='ctrl+w')",
			want: chat.UITARSReply{Thought: "Copy, new tab, submit.",
				Action: "hotkey(key='ctrl c')\n\nhotkey(key='Ctrl Shift T')\n\nhotkey(key='enter')\n\nhotkey(key='arrowdown')\n\npress(key='space')\n\nhotkey(key='ctrl+w')",
				Actions: []actions.Action{
					{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "c"}},
					{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, actions.Shift, "t"}},
					enter,
					{Kind: actions.Keypress, Keys: actions.Chord{"ArrowDown"}},
					{Kind: actions.Keypress, Keys: actions.Chord{"Space"}},
					{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "w"}},
				}},
		},
		{
			name: "type with escaped quotes and a trailing newline",
			in:   `Thought: Search for it.` + "\n" + `Action: type(content='He said \"hi\" and it\'s fine\n')`,
			want: chat.UITARSReply{Thought: "Search for it.", Action: `type(content='He said \"hi\" and it\'s fine\n')`,
				Actions: []actions.Action{{Kind: actions.Type, Text: `He said "hi" and it's fine`}, enter}},
		},
		{
			name: "type with an unescaped apostrophe, a line break and a backslash",
			in:   "Thought: Fill it in.\nAction: type(content='I'm here\\nC:\\Users\\\\me')",
			want: chat.UITARSReply{Thought: "Fill it in.", Action: "type(content='I'm here\\nC:\\Users\\\\me')",
				Actions: []actions.Action{{Kind: actions.Type, Text: "I'm here\nC:\\Users\\me"}}},
		},
		{
			name: "type with a literal newline at the end",
			in:   "Thought: Submit.\nAction: type(content='kittens\n')",
			want: chat.UITARSReply{Thought: "Submit.", Action: "type(content='kittens\n')",
				Actions: []actions.Action{{Kind: actions.Type, Text: "kittens"}, enter}},
		},
		{
			name: "type only a newline presses Enter",
			in:   `Action: type(content='\n')`,
			want: chat.UITARSReply{Action: `type(content='\n')`, Actions: []actions.Action{enter}},
		},
		{
			name: "scrolls move half the space",
			in: "Thought: Look further down.\nAction: scroll(start_box='<|box_start|>(640,400)<|box_end|>', direction='down')\n\n" +
				"scroll(direction='up')\n\nscroll(start_box='(1,1)', direction='Left')\n\nscroll(direction=' right ')",
			want: chat.UITARSReply{Thought: "Look further down.",
				Action: "scroll(start_box='<|box_start|>(640,400)<|box_end|>', direction='down')\n\nscroll(direction='up')\n\n" +
					"scroll(start_box='(1,1)', direction='Left')\n\nscroll(direction=' right ')",
				Actions: []actions.Action{
					{Kind: actions.Scroll, At: actions.Pt(640, 400), HasAt: true, DeltaY: 406},
					{Kind: actions.Scroll, DeltaY: -406},
					{Kind: actions.Scroll, At: actions.Pt(1, 1), HasAt: true, DeltaX: -644},
					{Kind: actions.Scroll, DeltaX: 644},
				}},
		},
		{
			name: "wait and screenshot",
			in:   "Thought: The page is loading.\nAction: wait()\n\nscreenshot()",
			want: chat.UITARSReply{Thought: "The page is loading.", Action: "wait()\n\nscreenshot()",
				Actions: []actions.Action{{Kind: actions.Wait, Duration: 5 * time.Second}, {Kind: actions.Screenshot}}},
		},
		{
			name: "finished with an answer",
			in:   "Thought: The price is shown.\nAction: finished(content='The price is \\'$5\\'.')",
			want: chat.UITARSReply{Thought: "The price is shown.", Action: `finished(content='The price is \'$5\'.')`,
				Finished: true, Answer: "The price is '$5'."},
		},
		{
			name: "actions then finished, and what follows is ignored",
			in:   "Thought: Submit and stop.\nAction: hotkey(key='enter')\n\nfinished()\n\nclick(start_box='(1,1)')",
			want: chat.UITARSReply{Thought: "Submit and stop.", Action: "hotkey(key='enter')\n\nfinished()\n\nclick(start_box='(1,1)')",
				Actions: []actions.Action{enter}, Finished: true},
		},
		{
			name: "call_user",
			in:   "Thought: A captcha blocks the page; I need a human.\nAction: call_user()",
			want: chat.UITARSReply{Thought: "A captcha blocks the page; I need a human.", Action: "call_user()", Finished: true, CallUser: true},
		},
		{
			name: "reflection and action summary",
			in:   "Reflection: The last click missed.\nAction_Summary: Click the blue button instead.\nAction: click(start_box='(5,6)')",
			want: chat.UITARSReply{Reflection: "The last click missed.", Thought: "Click the blue button instead.",
				Action: "click(start_box='(5,6)')", Actions: []actions.Action{click(5, 6)}},
		},
		{
			name: "code fences and a full-width colon",
			in:   "```\nThought: Fenced.\nAction： click(start_box='(7,8)')\n```",
			want: chat.UITARSReply{Thought: "Fenced.", Action: "click(start_box='(7,8)')", Actions: []actions.Action{click(7, 8)}},
		},
		{
			name: "coordinates outside the image pass through",
			in:   "Thought: Far away.\nAction: click(start_box='(5000,-20)')",
			want: chat.UITARSReply{Thought: "Far away.", Action: "click(start_box='(5000,-20)')", Actions: []actions.Action{click(5000, -20)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chat.ParseUITARS(tt.in, resized)
			if err != nil {
				t.Fatalf("ParseUITARS(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseUITARS(%q) (-want +got):\n%s", tt.in, diff)
			}
			for i, a := range got.Actions {
				if err := a.Validate(actions.Limits{}); err != nil {
					t.Errorf("ParseUITARS(%q) action %d = %+v does not validate: %v", tt.in, i, a, err)
				}
			}
		})
	}
}

func TestParseUITARSErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string // the error, without "invalid action: "
		thought string
	}{
		{"no action", "I think the task is done.", `the reply has no "Action:"; answer in the format "Thought: ...\nAction: ..."`, "I think the task is done."},
		{"empty", "", `the reply has no "Action:"; answer in the format "Thought: ...\nAction: ..."`, ""},
		{"nothing after Action", "Thought: hmm\nAction:   ", `"Action:" is followed by no action (want one of ` +
			"click, left_double, right_single, drag, hotkey, type, scroll, wait, finished, call_user (also left_single, hover, select, press, screenshot))", "hmm"},
		{"missing box", "Thought: Click it.\nAction: click()", `click: missing start_box (want start_box='<|box_start|>(x,y)<|box_end|>')`, "Click it."},
		{"missing end box", "Action: drag(start_box='(1,2)')", `drag: missing end_box (want end_box='<|box_start|>(x,y)<|box_end|>')`, ""},
		{"unknown action", "Thought: Zoom.\nAction: zoom_in(start_box='(1,2)')", `unknown action "zoom_in" (want one of ` +
			"click, left_double, right_single, drag, hotkey, type, scroll, wait, finished, call_user (also left_single, hover, select, press, screenshot))", "Zoom."},
		{"phone action", "Action: press_home()", `press_home is a phone action; this is a computer (want one of ` +
			"click, left_double, right_single, drag, hotkey, type, scroll, wait, finished, call_user (also left_single, hover, select, press, screenshot))", ""},
		{"keydown", "Action: keydown(key='shift')", `keydown is not available here; press keys together with hotkey(key='ctrl c')`, ""},
		{"not a number", "Action: click(start_box='(abc,12)')", `click: start_box "(abc,12)": "abc" is not a number`, ""},
		{"three numbers", "Action: click(start_box='(1,2,3)')", `click: start_box "(1,2,3)" has 3 numbers, want 2 (x,y) or 4 (x1,y1,x2,y2)`, ""},
		{"empty box", "Action: click(start_box='<|box_start|><|box_end|>')", `click: start_box "<|box_start|><|box_end|>": no coordinates`, ""},
		{"hex number", "Action: click(start_box='(0x10,2)')", `click: start_box "(0x10,2)": "0x10" is not a number`, ""},
		{"infinite number", "Action: click(start_box='(inf,2)')", `click: start_box "(inf,2)": "inf" is not a number`, ""},
		{"unterminated string", "Action: type(content='hello", `type: the string of content has no closing quote`, ""},
		{"missing paren", "Action: click(start_box='(1,2)'", `click: missing ')'`, ""},
		{"positional argument", "Action: click('(1,2)')", `click: arguments must be named, as in click(start_box='...'), got "'(1,2)')"`, ""},
		{"argument twice", "Action: click(point='<point>1 2</point>', start_box='(3,4)')", `click: argument start_box is given twice`, ""},
		{"trailing text", "Action: click(start_box='(1,2)')\nThis should open the menu.", `unexpected text after the actions: "This should open the menu." (separate actions with a blank line; write nothing after them)`, ""},
		{"not a call", "Thought: x\nAction: the search button", `want an action such as click(start_box='<|box_start|>(x,y)<|box_end|>'), got "the search button"`, "x"},
		{"empty type", "Action: type(content='')", `type: content is empty`, ""},
		{"type without content", "Action: type(text='hi')", `type: missing content (want type(content='...'))`, ""},
		{"missing direction", "Action: scroll(start_box='(1,2)')", `scroll: missing direction (want up, down, left or right)`, ""},
		{"bad direction", "Action: scroll(direction='down or up')", `scroll: direction "down or up" is not one of up, down, left or right`, ""},
		{"bad key", "Action: hotkey(key='ctrl banana')", `hotkey: unknown key "banana" (closest: Pause, |, Alt)`, ""},
		{"no key", "Action: hotkey(key='')", `hotkey: missing key (want hotkey(key='ctrl c'))`, ""},
		{"second action bad", "Action: click(start_box='(1,2)')\n\nclick()", `action 2 of 2: click: missing start_box (want start_box='<|box_start|>(x,y)<|box_end|>')`, ""},
		{"unquoted value past the line", "Action: scroll(direction=down\n)", `scroll: the value of direction runs past the end of the line (quote it: direction='...')`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chat.ParseUITARS(tt.in, resized)
			if err == nil {
				t.Fatalf("ParseUITARS(%q) = %+v, want error %q", tt.in, got, tt.want)
			}
			if !errors.Is(err, actions.ErrInvalid) {
				t.Errorf("ParseUITARS(%q) error = %v, want it to wrap actions.ErrInvalid", tt.in, err)
			}
			if msg := strings.TrimPrefix(err.Error(), "invalid action: "); msg != tt.want {
				t.Errorf("ParseUITARS(%q) error =\n%s\nwant\n%s", tt.in, msg, tt.want)
			}
			if got.Thought != tt.thought {
				t.Errorf("ParseUITARS(%q) thought = %q, want %q", tt.in, got.Thought, tt.thought)
			}
		})
	}
}

func TestParseUITARSSpaces(t *testing.T) {
	in := "Action: scroll(direction='down')"
	for _, tt := range []struct {
		space screen.Space
		dy    float64
	}{
		{screen.Grid1000, 500},
		{resized, 406},
	} {
		got, err := chat.ParseUITARS(in, tt.space)
		if err != nil {
			t.Fatalf("ParseUITARS(%q, %v) error: %v", in, tt.space, err)
		}
		if got.Actions[0].DeltaY != tt.dy {
			t.Errorf("ParseUITARS(%q, %v) dy = %g, want %g", in, tt.space, got.Actions[0].DeltaY, tt.dy)
		}
	}
	if _, err := chat.ParseUITARS(in, screen.Image); err == nil {
		t.Errorf("ParseUITARS(%q, image space) = nil error, want one: the image space has no fixed extent", in)
	}
}

func TestFormatUITARS(t *testing.T) {
	tests := []struct {
		a    actions.Action
		want string
	}{
		{click(640, 52.5), "click(start_box='<|box_start|>(640,52.5)<|box_end|>')"},
		{actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Button: actions.Right}, "right_single(start_box='<|box_start|>(1,2)<|box_end|>')"},
		{actions.Action{Kind: actions.DoubleClick, At: actions.Pt(1, 2), HasAt: true}, "left_double(start_box='<|box_start|>(1,2)<|box_end|>')"},
		{actions.Action{Kind: actions.Move, At: actions.Pt(1, 2), HasAt: true}, "hover(start_box='<|box_start|>(1,2)<|box_end|>')"},
		{actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(1, 2), actions.Pt(3, 4)}},
			"drag(start_box='<|box_start|>(1,2)<|box_end|>', end_box='<|box_start|>(3,4)<|box_end|>')"},
		{actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, actions.Shift, "PageDown"}}, "hotkey(key='ctrl shift pagedown')"},
		{actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Meta, "Space"}}, "hotkey(key='meta space')"},
		{actions.Action{Kind: actions.Type, Text: "it's a \"test\"\\ok\tdone\nnext"}, `type(content='it\'s a "test"\\ok\tdone\nnext')`},
		{actions.Action{Kind: actions.Scroll, At: actions.Pt(5, 6), HasAt: true, DeltaY: -406}, "scroll(start_box='<|box_start|>(5,6)<|box_end|>', direction='up')"},
		{actions.Action{Kind: actions.Scroll, DeltaX: 644}, "scroll(direction='right')"},
		{actions.Action{Kind: actions.Wait, Duration: 5 * time.Second}, "wait()"},
		{actions.Action{Kind: actions.Screenshot}, "screenshot()"},
	}
	for _, tt := range tests {
		got, err := chat.FormatUITARS(tt.a)
		if err != nil || got != tt.want {
			t.Errorf("FormatUITARS(%+v) = %q, %v, want %q", tt.a, got, err, tt.want)
			continue
		}
		// ParseUITARS reads it back.
		r, err := chat.ParseUITARS("Action: "+got, resized)
		if err != nil {
			t.Errorf("ParseUITARS(FormatUITARS(%+v)) error: %v", tt.a, err)
			continue
		}
		if diff := cmp.Diff([]actions.Action{tt.a}, r.Actions); diff != "" {
			t.Errorf("ParseUITARS(FormatUITARS(%+v)) (-want +got):\n%s", tt.a, diff)
		}
	}
	for _, a := range []actions.Action{
		{Kind: actions.Navigate, URL: "https://example.com/"},
		{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Button: actions.Middle},
		{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Modifiers: actions.Chord{actions.Shift}},
		{Kind: actions.Click}, // no point
		{Kind: actions.Drag, Path: []actions.Point{actions.Pt(1, 2), actions.Pt(3, 4), actions.Pt(5, 6)}},
		{Kind: actions.Scroll, DeltaX: 1, DeltaY: 1},
		{Kind: actions.Type},
	} {
		if got, err := chat.FormatUITARS(a); err == nil {
			t.Errorf("FormatUITARS(%+v) = %q, want an error", a, got)
		}
	}
}
