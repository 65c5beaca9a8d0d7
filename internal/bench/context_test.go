package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/screen"
)

// pairingProviders are the adapters whose wire formats pair calls with
// results by id: the bench's four, with the chat adapter in its function
// calling dialect (UI-TARS has no call ids).
func pairingProviders() []contextProvider {
	var ps []contextProvider
	for _, p := range contextProviders() {
		if p.name == "chat" {
			p.name, p.model, p.run = "chat-functions", "qwen2.5-vl-7b", runChatFunctions
		}
		ps = append(ps, p)
	}
	return ps
}

// runChatFunctions is runChat for a function-calling model.
func runChatFunctions(ctx context.Context, t *contextTask, policy ctxpolicy.Policy, restart bool) ([][]byte, error) {
	tb := &fakeTB{}
	var replies []chattest.Reply
	for i, a := range t.steps {
		replies = append(replies, chattest.Calls(t.says[i], chattest.ComputerAction(tb, fmt.Sprintf("call_%02d", i+1), a)))
	}
	replies = append(replies, chattest.Text("The form is submitted."))
	srv := chattest.NewServer(tb, replies...)
	err := runTask(ctx, func() (harness.Model, error) {
		return chat.New(chat.Config{BaseURL: srv.URL, Model: "qwen2.5-vl-7b", Display: t.size, Context: policy,
			MaxImages: -1, MaxRetries: -1, Logger: quietLog})
	}, t, restart)
	var bodies [][]byte
	for _, r := range srv.Requests() {
		bodies = append(bodies, r.Body)
	}
	return bodies, firstErr(err, tb.close())
}

// TestContextPairingAndResume runs a task through every adapter with
// policies whose chunks are replaced during the task, straight and with a
// restart (MarshalState, a new Model, UnmarshalState) before every turn.
// Every request must answer every call of the conversation, by id, exactly
// once and in the next message, and carry no more full images than the
// policy allows; the restarted run must send byte for byte the requests of
// the straight one.
func TestContextPairingAndResume(t *testing.T) {
	skipUnderRace(t)
	const steps = 14 // crosses unchangedSteps 9 and several chunk replacements
	policies := []ctxpolicy.Policy{{}, {Keep: 2, Chunk: 3}, {Keep: 1, Chunk: 1}, {Keep: 4, Chunk: 2, Repeats: true}}
	for _, p := range pairingProviders() {
		task := newContextTask(p.name, p.model, steps)
		if p.name == "chat-functions" {
			task = newContextTask("chat", p.model, steps)
		}
		for _, policy := range policies {
			t.Run(fmt.Sprintf("%s/keep%d-chunk%d-repeats%v", p.name, policy.Keep, policy.Chunk, policy.Repeats), func(t *testing.T) {
				straight, err := p.run(t.Context(), task, policy, false)
				if err != nil {
					t.Fatalf("straight run: %v", err)
				}
				if len(straight) != steps+1 {
					t.Fatalf("straight run sent %d requests, want %d", len(straight), steps+1)
				}
				most := policy.Most()
				for i, body := range straight {
					if err := checkPairing(p.name, body); err != nil {
						t.Errorf("request %d: %v", i, err)
					}
					if n := fullImages(t, body); n > most {
						t.Errorf("request %d carries %d full screenshots, want at most %d", i, n, most)
					}
				}
				restarted, err := p.run(t.Context(), task, policy, true)
				if err != nil {
					t.Fatalf("run with restarts: %v", err)
				}
				if len(restarted) != len(straight) {
					t.Fatalf("%d requests with restarts, %d without", len(restarted), len(straight))
				}
				for i := range straight {
					if diff := cmp.Diff(string(straight[i]), string(restarted[i])); diff != "" {
						t.Errorf("request %d after a restart differs (-straight +restarted):\n%.2000s", i, diff)
					}
				}
			})
		}
	}
}

// skipUnderRace skips a test that decodes megabytes of JSON on one
// goroutine: 2 minutes under -race against 10 s without, and make test runs
// it again without -race (its SPOTTER_INTEGRATION=1 step), where it counts.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector && os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("single-goroutine JSON work: run without -race (make test's SPOTTER_INTEGRATION=1 step runs it)")
	}
}

// fullImages counts the screenshots a request carries in full (OpenAI's
// placeholder image is 16x10).
func fullImages(t *testing.T, body []byte) int {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	var sizes []screen.Size
	strip(v, &sizes)
	n := 0
	for _, s := range sizes {
		if s.W > 16 {
			n++
		}
	}
	return n
}

// checkPairing checks that every call in a request's conversation is
// answered once, by id, in the message or items that follow it, before
// the model's next turn.
func checkPairing(provider string, body []byte) error {
	var calls, answers [][]string // per model turn: the ids it called, the ids answered after it
	switch provider {
	case "anthropic":
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string `json:"type"`
					ID        string `json:"id"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return err
		}
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				calls, answers = append(calls, nil), append(answers, nil)
			}
			for _, c := range m.Content {
				switch {
				case c.Type == "tool_use" && len(calls) > 0:
					calls[len(calls)-1] = append(calls[len(calls)-1], c.ID)
				case c.Type == "tool_result" && len(answers) > 0:
					answers[len(answers)-1] = append(answers[len(answers)-1], c.ToolUseID)
				}
			}
		}
	case "openai":
		var req struct {
			Input []struct {
				Type   string `json:"type"`
				Role   string `json:"role"`
				CallID string `json:"call_id"`
			} `json:"input"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return err
		}
		answered := true // the last item was an answer or a user message
		for _, it := range req.Input {
			switch it.Type {
			case "computer_call", "function_call":
				if answered {
					calls, answers = append(calls, nil), append(answers, nil)
				}
				answered = false
				calls[len(calls)-1] = append(calls[len(calls)-1], it.CallID)
			case "computer_call_output", "function_call_output":
				answered = true
				if len(answers) > 0 {
					answers[len(answers)-1] = append(answers[len(answers)-1], it.CallID)
				}
			}
		}
	case "gemini":
		var req struct {
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					FunctionCall     *struct{ ID string } `json:"functionCall"`
					FunctionResponse *struct{ ID string } `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return err
		}
		for _, c := range req.Contents {
			if c.Role == "model" {
				calls, answers = append(calls, nil), append(answers, nil)
			}
			for _, p := range c.Parts {
				switch {
				case p.FunctionCall != nil && len(calls) > 0:
					calls[len(calls)-1] = append(calls[len(calls)-1], p.FunctionCall.ID)
				case p.FunctionResponse != nil && len(answers) > 0:
					answers[len(answers)-1] = append(answers[len(answers)-1], p.FunctionResponse.ID)
				}
			}
		}
	default:
		msgs, err := chattest.Request{Body: body}.Messages()
		if err != nil {
			return err
		}
		for _, m := range msgs {
			switch m.Role {
			case "assistant":
				calls, answers = append(calls, nil), append(answers, nil)
				for _, c := range m.ToolCalls {
					calls[len(calls)-1] = append(calls[len(calls)-1], c.ID)
				}
			case "tool":
				if len(answers) > 0 {
					answers[len(answers)-1] = append(answers[len(answers)-1], m.ToolCallID)
				}
			}
		}
	}
	if len(calls) == 0 {
		return nil
	}
	for i := range calls {
		if !slices.Equal(calls[i], answers[i]) {
			return fmt.Errorf("model turn %d called %v, the conversation answers %v", i, calls[i], answers[i])
		}
	}
	return nil
}

// TestContextFigures prices a short task: Spotter's policy costs less than
// sending every screenshot and no more than each provider's reference, and
// a provider without cache prices bills exactly the tokens sent.
func TestContextFigures(t *testing.T) {
	skipUnderRace(t)
	for _, p := range contextProviders() {
		task := newContextTask(p.name, p.model, 20)
		values := map[string]float64{}
		costs := map[string]ContextCost{}
		for _, s := range contextStrategies {
			c, v, err := p.cost(t.Context(), task, s, p.policy(s))
			if err != nil {
				t.Fatal(err)
			}
			values[s], costs[s] = v, c
			if c.Requests != 21 {
				t.Errorf("%s %s: %d requests, want 21", p.name, s, c.Requests)
			}
			if p.cache.kind == "none" && v != float64(c.InputTokens) {
				t.Errorf("%s %s: value %v, want the %d tokens sent (no cache prices)", p.name, s, v, c.InputTokens)
			}
			if v < float64(c.FloorTokens) {
				t.Errorf("%s %s: value %v is under the floor %d", p.name, s, v, c.FloorTokens)
			}
		}
		if !(values["spotter"] < values["send-all"]) || values["spotter"] > values["reference"] {
			t.Errorf("%s: spotter %v, send-all %v, reference %v; want spotter < send-all and <= reference",
				p.name, values["spotter"], values["send-all"], values["reference"])
		}
		if a, s := costs["send-all"], costs["spotter"]; s.Images >= a.Images || s.MaxRequestBytes >= a.MaxRequestBytes {
			t.Errorf("%s: spotter sent %d images, largest request %d bytes; send-all %d, %d",
				p.name, s.Images, s.MaxRequestBytes, a.Images, a.MaxRequestBytes)
		}
	}
}

// TestReplay checks the cache rules on hand-made requests.
func TestReplay(t *testing.T) {
	blk := func(key string, tokens int, bp bool) block {
		return block{key: []byte(key), tokens: tokens, breakpoint: bp}
	}
	t.Run("explicit", func(t *testing.T) {
		rules := cacheRules{kind: "explicit", min: 100, lookback: 2, write: 1.25, read: 0.1}
		cache := map[[32]byte]bool{}
		type rw struct{ read, write int }
		var got []rw
		for _, req := range [][]block{
			{blk("sys", 200, true), blk("a", 50, false), blk("b", 50, true)},                                                                // writes all
			{blk("sys", 200, true), blk("a", 50, false), blk("b", 50, false), blk("c", 50, true)},                                           // reads 300
			{blk("sys", 200, true), blk("x", 50, false), blk("b", 50, false), blk("c", 50, true)},                                           // a changed: reads sys
			{blk("sys", 200, true), blk("x", 50, false), blk("b", 50, false), blk("c", 50, false), blk("d", 10, false), blk("e", 10, true)}, // lookback 2 finds c
			{blk("s", 10, true), blk("t", 10, true)},                                                                                        // under min: nothing cached
		} {
			r, w := replay(req, rules, cache)
			got = append(got, rw{r, w})
		}
		want := []rw{{0, 300}, {300, 50}, {200, 150}, {350, 20}, {0, 0}}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(rw{})); diff != "" {
			t.Errorf("replay (-want +got):\n%s", diff)
		}
	})
	t.Run("implicit", func(t *testing.T) {
		rules := cacheRules{kind: "implicit", min: 1024, step: 128, read: 0.1}
		cache := map[[32]byte]bool{}
		var got []int
		for _, req := range [][]block{
			{blk("h", 1000, false), blk("a", 500, false)},
			{blk("h", 1000, false), blk("a", 500, false), blk("b", 10, false)}, // 1500 cached: 1024 + 3*128
			{blk("h", 1000, false), blk("x", 500, false)},                      // 1000 < min
		} {
			r, _ := replay(req, rules, cache)
			got = append(got, r)
		}
		if diff := cmp.Diff([]int{0, 1408, 0}, got); diff != "" {
			t.Errorf("cached tokens (-want +got):\n%s", diff)
		}
	})
}

// TestContextSweep prices the task with the policies around the default,
// to choose it: with SPOTTER_CONTEXT_SWEEP=1 it logs the table
// docs/PERFORMANCE.md shows and checks that the default chunk is within 2%
// of the cheapest at the default keep, for every provider with cache
// prices. It takes a few minutes.
func TestContextSweep(t *testing.T) {
	if os.Getenv("SPOTTER_CONTEXT_SWEEP") != "1" {
		t.Skip("SPOTTER_CONTEXT_SWEEP=1 prices the task with every policy of the sweep")
	}
	chunks := []int{1, 2, 3, 4, 5, 6, 8, 10, 12, 16}
	for _, p := range contextProviders() {
		task := newContextTask(p.name, p.model, ContextSteps)
		_, all, err := p.cost(t.Context(), task, "send-all", sendAll)
		if err != nil {
			t.Fatal(err)
		}
		var line strings.Builder
		fmt.Fprintf(&line, "%s (send-all %.0f):", p.name, all)
		best, atDefault := 0.0, 0.0
		for _, keep := range []int{1, 2, 3, 4, 5} {
			fmt.Fprintf(&line, "\n  keep %d:", keep)
			for _, chunk := range chunks {
				policy := ctxpolicy.Policy{Keep: keep, Chunk: chunk}
				if p.name == "chat" && policy.Most() > chat.DefaultMaxImages {
					continue
				}
				_, v, err := p.cost(t.Context(), task, "spotter", policy)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&line, " c%d %.0f", chunk, v)
				if keep == ctxpolicy.DefaultKeep {
					if best == 0 || v < best {
						best = v
					}
					if chunk == ctxpolicy.DefaultChunk {
						atDefault = v
					}
				}
			}
		}
		t.Log(line.String())
		if p.cache.kind != "none" && atDefault > best*1.02 {
			t.Errorf("%s: the default chunk %d costs %.0f, the best at keep %d %.0f", p.name, ctxpolicy.DefaultChunk, atDefault, ctxpolicy.DefaultKeep, best)
		}
	}
}
