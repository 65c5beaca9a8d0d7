package cassette_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/spotter-harness/spotter/harness/cassette"
)

// post sends body to url with client and returns the response's status
// and body.
func post(client *http.Client, url, key, body string) string {
	req, err := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("x-api-key", key)
	resp, err := client.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// Record one exchange with a provider (here a stand-in server), then
// replay it in memory: a request for another model is refused with what
// differs, and the recorded request gets the recorded answer.
func Example() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"message","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn"}`)
	}))
	defer provider.Close()
	dir, err := os.MkdirTemp("", "cassette")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.json")
	const key = "sk-ant-example-0123456789"
	const request = `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`

	rec := &cassette.Recorder{Path: path, Secrets: []string{key}}
	fmt.Println("live:    ", post(&http.Client{Transport: rec}, provider.URL+"/v1/messages", key, request))
	raw, _ := os.ReadFile(path)
	fmt.Println("key in the cassette:", bytes.Contains(raw, []byte(key)))

	p, err := cassette.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("other model:", post(p.Client(), "https://api.anthropic.com/v1/messages", "any", `{"model":"claude-opus-4-5"}`)[:3])
	fmt.Println("replayed:", post(p.Client(), "https://api.anthropic.com/v1/messages", "any", request))
	for _, m := range p.Mismatches() {
		fmt.Println("mismatch:", m.Diffs)
	}
	// Output:
	// live:     200 {"type":"message","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn"}
	// key in the cassette: false
	// other model: 400
	// replayed: 200 {"type":"message","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn"}
	// mismatch: [model: got "claude-opus-4-5", want "claude-sonnet-4-5"]
}
