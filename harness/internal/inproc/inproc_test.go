package inproc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestTransport(t *testing.T) {
	var got string
	c := &http.Client{Transport: Transport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = r.Method + " " + r.URL.Path + " " + string(b)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "slow down")
	}))}
	resp, err := c.Post("http://fake.invalid/v1/x", "text/plain", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got != "POST /v1/x hi" || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || string(b) != "slow down" {
		t.Errorf("served %q, answered %d %q %q", got, resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://fake.invalid/", nil)
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled request = %v, want context.Canceled", err)
	}
}
