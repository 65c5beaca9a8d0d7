package cassette

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Match summarizes a request body for replay: what must be the same for a
// recorded response to be a valid answer.
type Match struct {
	// Model is the body's "model". Gemini names the model in the URL
	// path instead, which replay compares anyway.
	Model string `json:"model,omitempty"`
	// Tool is the type of the computer tool the request declares:
	// "computer_20250124" (Anthropic), "computer" or
	// "computer_use_preview" (OpenAI), "computer_use" (Gemini).
	Tool string `json:"tool,omitempty"`
	// Display is the display size declared with that tool, "1280x800";
	// empty when the tool declares none.
	Display string `json:"display,omitempty"`
	// Answers are the ids of the tool calls whose results the request
	// carries, in order.
	Answers []string `json:"answers,omitempty"`
}

// MatchBody summarizes a request body of any of the providers:
//
//   - Anthropic Messages and Chat Completions ("messages"): the
//     tool_use_id of each tool_result block, and the tool_call_id of each
//     "tool" message, after the last assistant message.
//   - OpenAI Responses ("input"): the call_id of each *_call_output item
//     after the last item the model produced (a message of role
//     assistant, reasoning, or any *_call).
//   - Gemini ("contents"): the id (or, when a model gives none, the name)
//     of each functionResponse after the last content of role model.
//
// A body that is not a JSON object gives the zero Match.
func MatchBody(body []byte) Match {
	var req struct {
		Model    json.RawMessage   `json:"model"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
		Input    json.RawMessage   `json:"input"`
		Contents []json.RawMessage `json:"contents"`
	}
	if json.Unmarshal(body, &req) != nil {
		// A field of an unexpected type: try the fields one by one.
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			return Match{}
		}
		req.Model = top["model"]
		_ = json.Unmarshal(top["tools"], &req.Tools)
		_ = json.Unmarshal(top["messages"], &req.Messages)
		req.Input = top["input"]
		_ = json.Unmarshal(top["contents"], &req.Contents)
	}
	var m Match
	_ = json.Unmarshal(req.Model, &m.Model)
	m.Tool, m.Display = computerTool(req.Tools)
	switch {
	case len(req.Messages) > 0:
		m.Answers = messagesAnswers(req.Messages)
	case len(req.Input) > 0:
		m.Answers = inputAnswers(req.Input)
	case len(req.Contents) > 0:
		m.Answers = contentsAnswers(req.Contents)
	}
	return m
}

// computerTool finds the computer tool among tools.
func computerTool(tools []json.RawMessage) (typ, display string) {
	for _, raw := range tools {
		var t struct {
			Type            string          `json:"type"`
			DisplayWidthPx  int             `json:"display_width_px"`
			DisplayHeightPx int             `json:"display_height_px"`
			DisplayWidth    int             `json:"display_width"`
			DisplayHeight   int             `json:"display_height"`
			ComputerUse     json.RawMessage `json:"computer_use"`
			ComputerUseJS   json.RawMessage `json:"computerUse"`
		}
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		switch {
		case strings.HasPrefix(t.Type, "computer"):
			w, h := cmpOr(t.DisplayWidthPx, t.DisplayWidth), cmpOr(t.DisplayHeightPx, t.DisplayHeight)
			if w > 0 || h > 0 {
				display = fmt.Sprintf("%dx%d", w, h)
			}
			return t.Type, display
		case len(t.ComputerUse) > 0 && string(t.ComputerUse) != "null",
			len(t.ComputerUseJS) > 0 && string(t.ComputerUseJS) != "null":
			return "computer_use", ""
		}
	}
	return "", ""
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func messagesAnswers(msgs []json.RawMessage) []string {
	var ids []string
	for _, raw := range msgs {
		var msg struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
		}
		if json.Unmarshal(raw, &msg) != nil {
			continue
		}
		switch msg.Role {
		case "assistant":
			ids = nil
		case "tool":
			ids = append(ids, msg.ToolCallID)
		case "user":
			var blocks []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
			}
			_ = json.Unmarshal(msg.Content, &blocks) // a string content has no results
			for _, b := range blocks {
				if b.Type == "tool_result" {
					ids = append(ids, b.ToolUseID)
				}
			}
		}
	}
	return ids
}

func inputAnswers(input json.RawMessage) []string {
	var items []struct {
		Type   string `json:"type"`
		Role   string `json:"role"`
		CallID string `json:"call_id"`
	}
	if json.Unmarshal(input, &items) != nil {
		return nil // a string input, or not a list of items
	}
	var ids []string
	for _, it := range items {
		switch {
		case strings.HasSuffix(it.Type, "_call_output"):
			ids = append(ids, it.CallID)
		case it.Type == "reasoning", strings.HasSuffix(it.Type, "_call"),
			(it.Type == "message" || it.Type == "") && it.Role == "assistant":
			ids = nil
		}
	}
	return ids
}

func contentsAnswers(contents []json.RawMessage) []string {
	type response struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	var ids []string
	for _, raw := range contents {
		var c struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionResponse  *response `json:"functionResponse"`
				FunctionResponse2 *response `json:"function_response"`
			} `json:"parts"`
		}
		if json.Unmarshal(raw, &c) != nil {
			continue
		}
		if c.Role == "model" {
			ids = nil
			continue
		}
		for _, p := range c.Parts {
			r := p.FunctionResponse
			if r == nil {
				r = p.FunctionResponse2
			}
			if r != nil {
				ids = append(ids, cmpOrString(r.ID, r.Name))
			}
		}
	}
	return ids
}

func cmpOrString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// diff compares a live request (method, URL, body) with a recorded one and
// returns one line per difference, empty when they match.
func diff(rec Request, method string, u *url.URL, body []byte) []string {
	var out []string
	if method != rec.Method {
		out = append(out, fmt.Sprintf("method: got %s, want %s", method, rec.Method))
	}
	ru, err := url.Parse(rec.URL)
	if err != nil { // Parse checked it
		return append(out, fmt.Sprintf("recorded url %q: %v", rec.URL, err))
	}
	if u.Path != ru.Path {
		out = append(out, fmt.Sprintf("path: got %q, want %q", u.Path, ru.Path))
	}
	if got, want := publicQuery(u.RawQuery), publicQuery(ru.RawQuery); got != want {
		out = append(out, fmt.Sprintf("query: got %q, want %q", got, want))
	}
	want := rec.Match
	if want == nil {
		if rec.Payload.isEmpty() {
			return out
		}
		w := MatchBody(rec.Payload.Bytes())
		want = &w
	}
	got := MatchBody(body)
	if want.Model != "" && got.Model != want.Model {
		out = append(out, fmt.Sprintf("model: got %q, want %q", got.Model, want.Model))
	}
	if want.Tool != "" && got.Tool != want.Tool {
		out = append(out, fmt.Sprintf("tool: got %q, want %q", got.Tool, want.Tool))
	}
	if want.Display != "" && got.Display != want.Display {
		out = append(out, fmt.Sprintf("display: got %q, want %q", got.Display, want.Display))
	}
	if missing, extra := setDiff(want.Answers, got.Answers); len(missing)+len(extra) > 0 {
		line := fmt.Sprintf("answers: got %s, want %s", list(got.Answers), list(want.Answers))
		if len(missing) > 0 {
			line += "; missing " + list(missing)
		}
		if len(extra) > 0 {
			line += "; unexpected " + list(extra)
		}
		out = append(out, line)
	}
	return out
}

func (p Payload) isEmpty() bool {
	return len(p.JSON) == 0 && p.Text == "" && len(p.Base64) == 0
}

// setDiff returns the elements of want missing from got and those of got
// not in want, counting repeats.
func setDiff(want, got []string) (missing, extra []string) {
	left := slices.Clone(got)
	for _, w := range want {
		if i := slices.Index(left, w); i >= 0 {
			left = slices.Delete(left, i, i+1)
		} else {
			missing = append(missing, w)
		}
	}
	return missing, left
}

func list(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// publicQuery is raw without its secret parameters, in canonical order.
func publicQuery(raw string) string {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return raw
	}
	for k := range v {
		if isSecretParam(k) {
			v.Del(k)
		}
	}
	return v.Encode()
}
