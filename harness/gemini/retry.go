package gemini

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// retryInfo reads the retry delay from a Google API error body,
//
//	{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}]}}
//
// for retry.Transport's Hint.
func retryInfo(body []byte) (time.Duration, bool) {
	var v struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return 0, false
	}
	for _, d := range v.Error.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			if w, err := time.ParseDuration(d.RetryDelay); err == nil && w >= 0 {
				return w, true
			}
		}
	}
	return 0, false
}

// checkResponse says whether a 2xx body is a GenerateContentResponse: it
// has candidates, or prompt feedback saying why it has none. The SDK's
// converter asserts types without checking them, so what it asserts is
// checked here: candidates is a list of objects, and a candidate's
// citationMetadata is an object.
func checkResponse(body []byte) error {
	var r struct {
		Candidates     []json.RawMessage `json:"candidates"`
		PromptFeedback json.RawMessage   `json:"promptFeedback"`
	}
	bad := errors.New("a GenerateContentResponse")
	if json.Unmarshal(body, &r) != nil {
		return bad
	}
	if r.Candidates == nil && !strings.HasPrefix(strings.TrimSpace(string(r.PromptFeedback)), "{") {
		return bad
	}
	for _, c := range r.Candidates {
		var cand map[string]json.RawMessage
		if json.Unmarshal(c, &cand) != nil || cand == nil {
			return bad
		}
		if m, ok := cand["citationMetadata"]; ok && !isObjectOrNull(m) {
			return bad
		}
	}
	return nil
}

func isObjectOrNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "null" || strings.HasPrefix(s, "{")
}
