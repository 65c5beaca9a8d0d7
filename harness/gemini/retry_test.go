package gemini

import (
	"testing"
	"time"
)

func TestRetryInfo(t *testing.T) {
	tests := []struct {
		body string
		want time.Duration
		ok   bool
	}{
		{`{"error": {"code": 429, "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2.5s"}]}}`, 2500 * time.Millisecond, true},
		{`{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo"}]}}`, 0, false},
		{`{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "-1s"}]}}`, 0, false},
		{`<html>`, 0, false},
		{``, 0, false},
	}
	for _, tt := range tests {
		got, ok := retryInfo([]byte(tt.body))
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryInfo(%q) = %v, %v; want %v, %v", tt.body, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCheckResponse(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"candidates": []}`:                            true,
		`{"promptFeedback": {"blockReason": "SAFETY"}}`: true,
		`{"candidates": null}`:                          false,
		`{"error": {"message": "x"}}`:                   false,
		`[]`:                                            false,
		`{"candidates": {}, "promptFeedback": "not an obj"}`: false,
		`{"candidates": [null]}`:                             false,
		`{"candidates": [{"citationMetadata": []}]}`:         false,
		`{"candidates": [{"citationMetadata": null}]}`:       true,
	} {
		if err := checkResponse([]byte(body)); (err == nil) != ok {
			t.Errorf("checkResponse(%s) = %v, want ok %v", body, err, ok)
		}
	}
}
