package approvals_test

import (
	"context"
	"fmt"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

func ExampleRules_Evaluate() {
	rules, err := approvals.Parse([]byte(`
hosts: ["*.example.com"]
rules:
  - name: sudo
    reason: running commands as root
    kinds: [type]
    text: ["^sudo "]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	buy := screen.Target{Tag: "button", Role: "button", Name: "Buy now"}
	for _, s := range []approvals.Subject{
		{Action: actions.Action{Kind: actions.Click}, DOM: true, Target: &buy},
		{Action: actions.Action{Kind: actions.Type, Text: "sudo rm -rf /"}},
		{Action: actions.Action{Kind: actions.Navigate, URL: "https://docs.example.com/"}},
	} {
		fmt.Println(s.Action.Kind, rules.Evaluate(s))
	}
	// Output:
	// click [{purchase clicking the button "Buy now" may spend money}]
	// type [{sudo running commands as root}]
	// navigate []
}

func ExampleGate() {
	q := approvals.NewQueue(approvals.QueueConfig{
		OnDecision: func(r approvals.Request, v approvals.Verdict) error {
			fmt.Printf("audit: %s %s %s by %s\n", r.Rule, r.Action.Kind, v.Kind, v.By)
			return nil
		},
	})
	gate, err := approvals.NewGate(approvals.GateConfig{Queue: q, Session: "s1"}) // no DOM: a VNC desktop
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := q.Subscribe(ctx)
	go func() { // the operator
		ev := <-events
		fmt.Println("pending:", ev.Request.Reason, "|", ev.Request.Note)
		_ = q.Decide(ev.Request.ID, approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "keep the window open"})
	}()
	chord := actions.Chord{actions.Alt, "F4"}
	_, err = gate.Approve(ctx, harness.ApprovalRequest{CallID: "call_1", Action: actions.Action{Kind: actions.Keypress, Keys: chord}})
	fmt.Println(err)
	// Output:
	// pending: pressing Alt+F4 may close a tab, a window or the browser | no DOM: decided on the action alone
	// audit: close-chord keypress deny by ann
	// denied by a human (close-chord: pressing Alt+F4 may close a tab, a window or the browser): keep the window open
}
