package anthropic_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
)

// screenshotTurns are n turns of one screenshot call each, then the end.
func screenshotTurns(t *testing.T, n int) []anthropictest.Reply {
	var rs []anthropictest.Reply
	for i := range n {
		rs = append(rs, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Action(t, fmt.Sprintf("toolu_%d", i+1),
			anthropic.Computer20250124, actions.Action{Kind: actions.Screenshot})}})
	}
	return append(rs, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}})
}

// TestUnchangedScreenshot: a screenshot identical to the last one sent is
// not sent again; the tool_result says so in words.
func TestUnchangedScreenshot(t *testing.T) {
	srv := anthropictest.NewServer(t, screenshotTurns(t, 2)...)
	m := newModel(t, srv, anthropic.Computer20250124)
	next(t, m, harness.Input{Task: "Look.", Shot: shot(t, "f1", 1)})
	next(t, m, harness.Input{Results: []harness.Result{{CallID: "toolu_1", Shot: shot(t, "f2", 1), Ran: 1}}})
	next(t, m, harness.Input{Results: []harness.Result{{CallID: "toolu_2", Shot: shot(t, "f3", 2), Ran: 1}}})
	var got []anthropictest.ToolResult
	for _, r := range srv.Requests()[1:] {
		results, err := anthropictest.ToolResults(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, results...)
	}
	want := []anthropictest.ToolResult{
		{ToolUseID: "toolu_1", Text: ctxpolicy.Unchanged},
		{ToolUseID: "toolu_2", Images: []string{"image/png"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
}

// TestCacheBreakpoints: old screenshots become the placeholder a chunk at
// a time, and once some are replaced a cache breakpoint marks the block
// before the oldest screenshot still sent, besides the tool's, the system
// prompt's and the newest block's: four, the API's limit.
func TestCacheBreakpoints(t *testing.T) {
	srv := anthropictest.NewServer(t, screenshotTurns(t, 5)...)
	m := newModel(t, srv, anthropic.Computer20250124, func(c *anthropic.Config) {
		c.Context = ctxpolicy.Policy{Keep: 1, Chunk: 2}
	})
	next(t, m, harness.Input{Task: "Look.", Shot: shot(t, "f0", 10)})
	for i := range 5 {
		next(t, m, harness.Input{Results: []harness.Result{{CallID: fmt.Sprintf("toolu_%d", i+1), Shot: shot(t, fmt.Sprintf("f%d", i+1), uint8(20+i)), Ran: 1}}})
	}
	// Each request's messages as a line: I image, P placeholder, . other
	// blocks; * marks a cache breakpoint.
	var got []string
	for _, r := range srv.Requests() {
		var body struct {
			Messages []struct {
				Content []struct {
					Type         string          `json:"type"`
					Text         string          `json:"text"`
					CacheControl json.RawMessage `json:"cache_control"`
					Content      []struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		var line strings.Builder
		for _, msg := range body.Messages {
			line.WriteString("|")
			for _, b := range msg.Content {
				kind := "."
				switch {
				case b.Type == "image":
					kind = "I"
				case b.Type == "text" && b.Text == ctxpolicy.Placeholder:
					kind = "P"
				case b.Type == "tool_result" && len(b.Content) > 0 && b.Content[len(b.Content)-1].Type == "image":
					kind = "I"
				case b.Type == "tool_result" && len(b.Content) > 0 && b.Content[len(b.Content)-1].Text == ctxpolicy.Placeholder:
					kind = "P"
				}
				if len(b.CacheControl) > 0 {
					kind += "*"
				}
				line.WriteString(kind)
			}
		}
		got = append(got, line.String())
		if n := strings.Count(string(r.Body), `"cache_control"`); n > 4 {
			t.Errorf("request %d has %d cache breakpoints, the API takes 4", len(got)-1, n)
		}
	}
	want := []string{
		"|I.*",                      // the task's screenshot and text
		"|I.|.|I*",                  // 2 images: Keep 1 + Chunk 2 - 1
		"|P.|.|P|.*|I*",             // 3: the 2 oldest replaced; a breakpoint before the oldest image sent
		"|P.|.|P|.*|I|.|I*",         // 4: kept
		"|P.|.|P|.|P|.|P|.*|I*",     // 5: 2 more replaced, the breakpoint moves
		"|P.|.|P|.|P|.|P|.*|I|.|I*", // 6
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
