package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/internal/runner"
)

const approvalsHelp = "which actions wait for a human: flagged (those the approval rules flag), all (every action with an effect), " +
	"or none (no approvals; provider safety checks are still refused). On a terminal spotter asks; otherwise a flagged " +
	"action is refused with its rule's reason, which the model sees as the call's error (default: the --rules file's supervise, or flagged)"

const rulesHelp = "approval rules: a YAML file in the schema of package approvals (see examples/rules/approvals.yaml), " +
	"checked at start; default: the built-in rules"

// approvalsFor builds the approvals of `spotter run`, `test` and `batch` from their flags: mode
// is --approvals ("": the rules file's supervise, flagged by default) and
// rulesFile is --rules. It returns nil for --approvals none: no approver
// at all. Its Asker is nil: nobody is asked, flagged actions are refused.
func approvalsFor(mode, rulesFile string) (*runner.ApprovalConfig, error) {
	rules := approvals.Default()
	if rulesFile != "" {
		var err error
		if rules, err = runner.LoadRules(rulesFile); err != nil {
			return nil, fmt.Errorf("--rules: %w", err)
		}
	}
	if mode == "" {
		// The file's supervise: none still sends the provider's safety
		// checks to a human, as it does in serve.
		return &runner.ApprovalConfig{Rules: rules}, nil
	}
	switch approvals.Supervise(mode) {
	case approvals.SuperviseNone:
		return nil, nil
	case approvals.SuperviseFlagged, approvals.SuperviseAll:
	default:
		return nil, fmt.Errorf("--approvals %q: want flagged, all or none", mode)
	}
	rules.Supervise = approvals.Supervise(mode)
	return &runner.ApprovalConfig{Rules: rules}, nil
}

// askedApprovals is approvalsFor with the person to ask: the terminal
// when there is one (standard input and stderr), else nobody, and then
// --approvals all refuses every action with an effect, which it says on
// stderr. `spotter run` and `spotter test` take their approvals from it.
func askedApprovals(mode, rulesFile string, stderr io.Writer) (*runner.ApprovalConfig, error) {
	appr, err := approvalsFor(mode, rulesFile)
	if err != nil || appr == nil {
		return appr, err
	}
	switch {
	case interactive(stderr):
		appr.Asker = runner.NewTerminal(os.Stdin, stderr)
	case appr.Rules.Supervise == approvals.SuperviseAll:
		fmt.Fprintln(stderr, "spotter: --approvals all with no terminal to ask: every action with an effect will be refused")
	}
	return appr, nil
}

// interactive reports whether a person can be asked: standard input and
// stderr are both terminals.
func interactive(stderr io.Writer) bool {
	tty, _ := terminal(stderr)
	return tty && term.IsTerminal(int(os.Stdin.Fd()))
}
