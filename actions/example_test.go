package actions_test

import (
	"fmt"
	"strings"

	"github.com/spotter-harness/spotter/actions"
)

func ExampleParseChord() {
	for _, s := range []string{
		"ctrl+shift+Page_Down",   // xdotool (Anthropic)
		"Control+C",              // Playwright (Gemini)
		"ctrl++",                 // the plus key
		"Return",                 // a single key
		"super+shift+alt+ctrl+t", // modifiers come out in a fixed order
		"ctrl+Pgdwn",
	} {
		c, err := actions.ParseChord(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(c)
	}
	c, _ := actions.ChordOf([]string{"CTRL", "SHIFT", "PAGEDOWN"}) // OpenAI
	fmt.Println(c)
	// Output:
	// Control+Shift+PageDown
	// Control+c
	// Control++
	// Enter
	// Control+Alt+Shift+Meta+t
	// chord "ctrl+Pgdwn": unknown key "Pgdwn" (closest: PageDown, ArrowDown, PageUp)
	// Control+Shift+PageDown
}

func ExampleKeyForRune() {
	for _, r := range "A\n€" {
		k, ok := actions.KeyForRune(r)
		fmt.Printf("%q: %q code=%s keyCode=%d keysym=%#x shift=%v ok=%v\n", r, k.Key, k.Code, k.KeyCode, k.Keysym, k.Shift, ok)
	}
	// Output:
	// 'A': "A" code=KeyA keyCode=65 keysym=0x41 shift=true ok=true
	// '\n': "Enter" code=Enter keyCode=13 keysym=0xff0d shift=false ok=true
	// '€': "" code= keyCode=0 keysym=0x0 shift=false ok=false
}

func ExampleAction_Validate() {
	a := actions.Action{Kind: actions.Type, Text: strings.Repeat("x", 10<<20)}
	fmt.Println(a.Validate(actions.Limits{}))
	batch := []actions.Action{{Kind: actions.Screenshot}, {Kind: actions.Move}}
	fmt.Println(actions.ValidateBatch(batch, actions.Limits{}))
	// Output:
	// type: text is 10485760 bytes, the limit is 10000
	// action 1 (move): at is required
}

func ExamplePolicy_Check() {
	p, err := actions.ParsePolicy([]byte(`
allow: [click, keypress, navigate]
forbid_keys: ["ctrl+w", "Alt+F4"]
max_batch: 16
hosts: [localhost, "*.example.com"]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range []actions.Action{
		{Kind: actions.Navigate, URL: "https://docs.example.com/start"},
		{Kind: actions.Navigate, URL: "http://localhost@evil.test/"},
		{Kind: actions.Keypress, Keys: actions.Chord{"CTRL", "W"}},
		{Kind: actions.Type, Text: "hello"},
		{Kind: actions.Screenshot},
	} {
		fmt.Println(p.Check(a))
	}
	fmt.Println(actions.Policy{}.Check(actions.Action{Kind: actions.Click}))
	// Output:
	// <nil>
	// navigate to evil.test is not allowed (allowed hosts: localhost, *.example.com)
	// keypress CTRL+W is not allowed (forbidden: Control+w)
	// type is not allowed (allowed: screenshot, click, keypress, navigate)
	// <nil>
	// click is not allowed (allowed: screenshot)
}
