package cassette

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// twoTurns is a cassette of an Anthropic-shaped conversation: a call, then
// the answer to it.
func twoTurns() *Cassette {
	match := func(answers ...string) *Match {
		return &Match{Model: "claude-sonnet-4-5", Tool: "computer_20250124", Display: "1280x800", Answers: answers}
	}
	return &Cassette{Version: Version, Interactions: []Interaction{{
		Request:  Request{Method: "POST", URL: "https://api.anthropic.com/v1/messages?beta=true", Match: match()},
		Response: Response{Status: 200, Payload: Payload{JSON: json.RawMessage(`{"n": 1}`)}},
	}, {
		Request:  Request{Method: "POST", URL: "https://api.anthropic.com/v1/messages?beta=true", Match: match("toolu_a", "toolu_b")},
		Response: Response{Status: 200, Header: map[string]string{"request-id": "req_2"}, Payload: Payload{JSON: json.RawMessage(`{"n": 2}`)}},
	}}}
}

// body is an Anthropic request body answering ids.
func body(model, tool string, w, h int, ids ...string) string {
	var results []map[string]any
	for _, id := range ids {
		results = append(results, map[string]any{"type": "tool_result", "tool_use_id": id})
	}
	msgs := []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "task"}}}}
	if len(ids) > 0 {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": "ok"}}},
			map[string]any{"role": "user", "content": results})
	}
	b, _ := json.Marshal(map[string]any{
		"model":    model,
		"tools":    []map[string]any{{"type": tool, "name": "computer", "display_width_px": w, "display_height_px": h}},
		"messages": msgs,
	})
	return string(b)
}

// do sends one request to p in memory and returns the status and body.
func do(t *testing.T, p *Player, method, url, reqBody string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(reqBody))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const messagesURL = "http://replay.invalid/v1/messages?beta=true"

func TestPlayerMismatch(t *testing.T) {
	first := body("claude-sonnet-4-5", "computer_20250124", 1280, 800)
	tests := []struct {
		name        string
		method, url string
		body        string
		wantDiffs   []string
	}{
		{"method", "PUT", messagesURL, first, []string{"method: got PUT, want POST"}},
		{"path", "POST", "http://replay.invalid/v1/complete?beta=true", first, []string{`path: got "/v1/complete", want "/v1/messages"`}},
		{"query", "POST", "http://replay.invalid/v1/messages", first, []string{`query: got "", want "beta=true"`}},
		{"model", "POST", messagesURL, body("claude-opus-4-5", "computer_20250124", 1280, 800), []string{`model: got "claude-opus-4-5", want "claude-sonnet-4-5"`}},
		{"tool", "POST", messagesURL, body("claude-sonnet-4-5", "computer_20251124", 1280, 800), []string{`tool: got "computer_20251124", want "computer_20250124"`}},
		{"display", "POST", messagesURL, body("claude-sonnet-4-5", "computer_20250124", 1024, 640), []string{`display: got "1024x640", want "1280x800"`}},
		{"answers", "POST", messagesURL, body("claude-sonnet-4-5", "computer_20250124", 1280, 800, "toolu_x"), []string{`answers: got ["toolu_x"], want []; unexpected ["toolu_x"]`}},
		{"not JSON", "POST", messagesURL, "hello", []string{`model: got "", want "claude-sonnet-4-5"`, `tool: got "", want "computer_20250124"`, `display: got "", want "1280x800"`}},
		{"several", "GET", "http://replay.invalid/v1/models", "", []string{"method: got GET, want POST", `path: got "/v1/models", want "/v1/messages"`, `query: got "", want "beta=true"`,
			`model: got "", want "claude-sonnet-4-5"`, `tool: got "", want "computer_20250124"`, `display: got "", want "1280x800"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlayer(twoTurns())
			status, got := do(t, p, tt.method, tt.url, tt.body)
			if status != http.StatusBadRequest {
				t.Errorf("%s %s status = %d, want 400", tt.method, tt.url, status)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string   `json:"type"`
					Message string   `json:"message"`
					Diffs   []string `json:"diffs"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(got), &e); err != nil {
				t.Fatalf("400 body %q is not JSON: %v", got, err)
			}
			if diff := cmp.Diff(tt.wantDiffs, e.Error.Diffs); diff != "" {
				t.Errorf("400 body diffs (-want +got):\n%s", diff)
			}
			if e.Type != "error" || e.Error.Type != "cassette_mismatch" || !strings.HasPrefix(e.Error.Message, tt.wantDiffs[0]) {
				t.Errorf("400 body = %s, want an error object whose message starts with %q", got, tt.wantDiffs[0])
			}
			ms := p.Mismatches()
			if len(ms) != 1 {
				t.Fatalf("Mismatches() = %v, want one", ms)
			}
			if diff := cmp.Diff(tt.wantDiffs, ms[0].Diffs); diff != "" {
				t.Errorf("recorded mismatch (-want +got):\n%s", diff)
			}
			if err := p.Err(); !errors.Is(err, ErrMismatch) {
				t.Errorf("Err() = %v, want ErrMismatch", err)
			}
			// The player did not advance: the right request still gets
			// the first response.
			if status, got := do(t, p, "POST", messagesURL, first); status != 200 || got != `{"n":1}` {
				t.Errorf("after the mismatch: %d %s, want 200 {\"n\":1}", status, got)
			}
			if n := p.Played(); n != 1 {
				t.Errorf("Played() = %d, want 1", n)
			}
		})
	}
}

func TestPlayerInOrder(t *testing.T) {
	p := NewPlayer(twoTurns())
	if err := p.Err(); !errors.Is(err, ErrUnplayed) || errors.Is(err, ErrMismatch) {
		t.Errorf("Err() before any request = %v, want ErrUnplayed only", err)
	}
	first := body("claude-sonnet-4-5", "computer_20250124", 1280, 800)
	// A secret query parameter is not part of the match, and the host is not.
	if status, got := do(t, p, "POST", "http://elsewhere:1/v1/messages?key=s3cret&beta=true", first); status != 200 || got != `{"n":1}` {
		t.Errorf("request 0: %d %s, want 200 {\"n\":1}", status, got)
	}
	// The answers are a set: order does not matter.
	second := body("claude-sonnet-4-5", "computer_20250124", 1280, 800, "toolu_b", "toolu_a")
	req, _ := http.NewRequestWithContext(t.Context(), "POST", messagesURL, strings.NewReader(second))
	resp, err := p.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != `{"n":2}` || resp.Header.Get("Request-Id") != "req_2" ||
		resp.Header.Get("Content-Type") != "application/json" || resp.ContentLength != 7 {
		t.Errorf("request 1: %d %v %s, want 200 with request-id req_2, JSON content type and length 7", resp.StatusCode, resp.Header, b)
	}
	if err := p.Err(); err != nil {
		t.Errorf("Err() after both requests = %v, want nil", err)
	}
	// One more is a mismatch too.
	status, got := do(t, p, "POST", messagesURL, second)
	if status != 400 || !strings.Contains(got, "no interaction left: all 2 were played") {
		t.Errorf("request 2: %d %s, want 400 saying all were played", status, got)
	}
	ms := p.Mismatches()
	if len(ms) != 1 || ms[0].Request != 2 || ms[0].Interaction != 2 {
		t.Errorf("Mismatches() = %v, want request 2 against interaction 2", ms)
	}
}

func TestPlayerMissingAnswer(t *testing.T) {
	p := NewPlayer(twoTurns())
	do(t, p, "POST", messagesURL, body("claude-sonnet-4-5", "computer_20250124", 1280, 800))
	status, _ := do(t, p, "POST", messagesURL, body("claude-sonnet-4-5", "computer_20250124", 1280, 800, "toolu_b", "toolu_c"))
	if status != 400 {
		t.Errorf("status = %d, want 400", status)
	}
	want := []string{`answers: got ["toolu_b" "toolu_c"], want ["toolu_a" "toolu_b"]; missing ["toolu_a"]; unexpected ["toolu_c"]`}
	if ms := p.Mismatches(); len(ms) != 1 || !cmp.Equal(ms[0].Diffs, want) {
		t.Errorf("Mismatches() = %v, want %q", ms, want)
	}
}

// TestPlayerWithoutMatch checks the fallbacks: a recorded request with a
// body but no match is matched on the body's summary; with neither, on
// method, path and query alone.
func TestPlayerWithoutMatch(t *testing.T) {
	c := &Cassette{Version: Version, Interactions: []Interaction{{
		Request:  Request{Method: "POST", URL: "/v1/responses", Payload: Payload{JSON: json.RawMessage(`{"model":"gpt-5.4","input":[{"type":"computer_call_output","call_id":"c1"}]}`)}},
		Response: Response{Status: 200, Payload: Payload{Text: "one"}},
	}, {
		Request:  Request{Method: "POST", URL: "/v1/responses"},
		Response: Response{Status: 201, Payload: Payload{Base64: []byte{0, 1, 2}}},
	}}}
	p := NewPlayer(c)
	if status, _ := do(t, p, "POST", "http://x/v1/responses", `{"model":"gpt-5.4","input":[]}`); status != 400 {
		t.Errorf("request without the answer: status %d, want 400", status)
	}
	if status, got := do(t, p, "POST", "http://x/v1/responses", `{"model":"gpt-5.4","input":[{"type":"computer_call_output","call_id":"c1"}]}`); status != 200 || got != "one" {
		t.Errorf("request 1: %d %q, want 200 one", status, got)
	}
	if status, got := do(t, p, "POST", "http://x/v1/responses", `{"model":"anything"}`); status != 201 || got != "\x00\x01\x02" {
		t.Errorf("request 2: %d %q, want 201 and the bytes", status, got)
	}
}

func TestPlayerCancelled(t *testing.T) {
	p := NewPlayer(twoTurns())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", messagesURL, strings.NewReader("{}"))
	if _, err := p.RoundTrip(req); err == nil {
		t.Errorf("RoundTrip with a cancelled context = nil error, want one")
	}
	if n := len(p.Mismatches()); n != 0 {
		t.Errorf("a cancelled request was checked: %d mismatches", n)
	}
}
