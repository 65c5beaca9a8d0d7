package cassette

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Secrets the tests send; none may reach a cassette file.
const (
	anthropicKey = "sk-ant-api03-TESTKEYabcdefghijklmnop0123456789"
	openaiKey    = "sk-proj-TESTKEYqrstuvwxyz9876543210"
	geminiKey    = "AIzaTESTKEY-gemini_0123456789abcdef"
	openaiOrg    = "org-TESTORGzzzz1234"
	configured   = "very-private-value-42" // only in Recorder.Secrets
)

// noisePNG returns a w x h PNG of pseudo-random pixels, which compresses
// badly, so its base64 is long.
func noisePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	x := uint32(2463534242)
	for i := 0; i < len(img.Pix); i += 4 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(x), byte(x>>8), byte(x>>16), 255
	}
	img.Set(0, 0, color.RGBA{1, 2, 3, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// exchange is one request a test sends and what the upstream answers.
type exchange struct {
	name   string
	method string
	path   string // with the query
	header map[string]string
	body   string

	status   int
	rheader  map[string]string
	response []byte
	gzip     bool // the upstream gzips the response
}

// exchanges are requests in each provider's shape, with credentials.
func exchanges(t testing.TB) []exchange {
	shot := base64.StdEncoding.EncodeToString(noisePNG(t, 40, 40))
	return []exchange{{
		name:   "anthropic",
		method: "POST",
		path:   "/v1/messages?beta=true",
		header: map[string]string{"x-api-key": anthropicKey, "anthropic-version": "2023-06-01",
			"anthropic-beta": "computer-use-2025-01-24", "content-type": "application/json", "X-Stainless-Os": "Linux"},
		body: `{"model":"claude-sonnet-4-5","max_tokens":10,"tools":[{"type":"computer_20250124","name":"computer","display_width_px":1280,"display_height_px":800}],` +
			`"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + shot + `"}},` +
			`{"type":"text","text":"my key is ` + anthropicKey + ` and ` + configured + `"}]}]}`,
		status:   200,
		rheader:  map[string]string{"content-type": "application/json", "request-id": "req_1", "anthropic-organization-id": "org-uuid-1", "anthropic-ratelimit-requests-limit": "50"},
		response: []byte(`{"id":"msg_1","type":"message","content":[{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[1,2]}}],"stop_reason":"tool_use","note":"<&>"}`),
	}, {
		name:   "openai",
		method: "POST",
		path:   "/v1/responses",
		header: map[string]string{"authorization": "Bearer " + openaiKey, "openai-organization": openaiOrg, "content-type": "application/json"},
		body: `{"model":"gpt-5.4","tools":[{"type":"computer"}],"input":[{"type":"computer_call","call_id":"call_1"},` +
			`{"type":"computer_call_output","call_id":"call_1","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,` + shot + `"}}]}`,
		status:   200,
		rheader:  map[string]string{"content-type": "application/json", "openai-organization": openaiOrg, "x-request-id": "req_2", "set-cookie": "s=1"},
		response: []byte(`{"id":"resp_1","output":[]}`),
		gzip:     true,
	}, {
		name:     "gemini",
		method:   "POST",
		path:     "/v1beta/models/gemini-3-flash:generateContent?alt=json&key=" + geminiKey,
		header:   map[string]string{"content-type": "application/json"},
		body:     `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"` + shot + `"}}]}],"tools":[{"computerUse":{"environment":"ENVIRONMENT_BROWSER"}}]}`,
		status:   429,
		rheader:  map[string]string{"content-type": "application/json", "retry-after": "1"},
		response: []byte(`{"error":{"code":429,"message":"quota for key ` + geminiKey + `","status":"RESOURCE_EXHAUSTED"}}`),
	}, {
		name:     "text",
		method:   "GET",
		path:     "/v1/models?api_key=" + openaiKey + "&limit=2",
		header:   map[string]string{"authorization": "Bearer " + openaiKey},
		status:   200,
		rheader:  map[string]string{"content-type": "text/plain; charset=utf-8"},
		response: []byte("plain text, not JSON\n"),
	}, {
		name:     "binary",
		method:   "GET",
		path:     "/blob",
		status:   200,
		rheader:  map[string]string{"content-type": "application/octet-stream"},
		response: []byte{0xff, 0x00, 0xfe, 0x01},
	}}
}

// upstream serves exchanges in any order, by method and path.
func upstream(t *testing.T, xs []exchange) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, x := range xs {
			if r.Method != x.method || r.URL.RequestURI() != x.path {
				continue
			}
			for k, v := range x.rheader {
				w.Header().Set(k, v)
			}
			body := x.response
			if x.gzip {
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				zw.Write(body)
				zw.Close()
				body = buf.Bytes()
				w.Header().Set("Content-Encoding", "gzip")
			}
			w.WriteHeader(x.status)
			w.Write(body)
			return
		}
		t.Errorf("upstream: unexpected %s %s", r.Method, r.URL.RequestURI())
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// response is what a client saw.
type response struct {
	Status int
	Header map[string]string // the headers the exchange set, minus secret ones
	Body   string
}

// send makes x's request with client to base and returns the response.
func send(t *testing.T, client *http.Client, base string, x exchange) response {
	t.Helper()
	var body io.Reader
	if x.body != "" {
		body = strings.NewReader(x.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), x.method, base+x.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range x.header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", x.name, x.method, x.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: read body: %v", x.name, err)
	}
	got := response{Status: resp.StatusCode, Body: string(b), Header: map[string]string{}}
	for k := range x.rheader {
		if v := resp.Header.Get(k); v != "" && !isSecretHeader(k) && k != "content-encoding" {
			got.Header[k] = v
		}
	}
	return got
}

func TestRecordThenReplay(t *testing.T) {
	xs := exchanges(t)
	srv := upstream(t, xs)
	path := filepath.Join(t.TempDir(), "rec.json")
	rec := &Recorder{Path: path, Secrets: []string{configured}}
	client := &http.Client{Transport: rec}

	var live []response
	for _, x := range xs {
		live = append(live, send(t, client, srv.URL, x))
	}
	for i, x := range xs {
		if live[i].Body != string(x.response) {
			t.Errorf("%s: body through the Recorder = %q, want the upstream's %q", x.name, live[i].Body, x.response)
		}
	}

	// Replay gives what the upstream said, except for the secrets in it.
	for i := range live {
		live[i].Body = strings.ReplaceAll(live[i].Body, geminiKey, Redacted)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	if got, want := len(c.Interactions), len(xs); got != want {
		t.Fatalf("recorded %d interactions, want %d", got, want)
	}

	t.Run("transport", func(t *testing.T) {
		p := NewPlayer(c)
		for i, x := range xs {
			// Any host: the in-memory transport never dials.
			got := send(t, p.Client(), "http://replay.invalid", x)
			if diff := cmp.Diff(live[i], got); diff != "" {
				t.Errorf("%s: replayed response (-live +replayed):\n%s", x.name, diff)
			}
		}
		if err := p.Err(); err != nil {
			t.Errorf("Err() = %v, want nil", err)
		}
	})
	t.Run("server", func(t *testing.T) {
		p := NewPlayer(c)
		base, stop, err := p.Serve(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			t.Errorf("Serve() base URL = %q, want one on 127.0.0.1", base)
		}
		for i, x := range xs {
			got := send(t, http.DefaultClient, base, x)
			if diff := cmp.Diff(live[i], got); diff != "" {
				t.Errorf("%s: replayed response (-live +replayed):\n%s", x.name, diff)
			}
		}
		if err := p.Err(); err != nil {
			t.Errorf("Err() = %v, want nil", err)
		}
	})
}

func TestRecordedFileHasNoSecrets(t *testing.T) {
	xs := exchanges(t)
	srv := upstream(t, xs)
	dir := t.TempDir()
	for _, name := range []string{"rec.json", "rec.json.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			rec := &Recorder{Path: path, Secrets: []string{configured}, Header: []string{"Authorization", "x-stainless-os"}}
			for _, x := range xs {
				send(t, &http.Client{Transport: rec}, srv.URL, x)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(name, ".gz") {
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("%s is not gzip: %v", name, err)
				}
				if raw, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			for _, secret := range []string{anthropicKey, openaiKey, geminiKey, openaiOrg, configured, "org-uuid-1", "s=1",
				"Bearer", "x-api-key", "authorization", "openai-organization", "set-cookie", "anthropic-organization-id"} {
				if bytes.Contains(bytes.ToLower(raw), bytes.ToLower([]byte(secret))) {
					t.Errorf("the cassette holds %q:\n%s", secret, raw)
				}
			}
			for _, want := range []string{Redacted, `"x-stainless-os": "Linux"`, `"anthropic-ratelimit-requests-limit": "50"`, `"key=`} {
				if want == `"key=` {
					if bytes.Contains(raw, []byte("key=")) {
						t.Errorf("the cassette holds a key= query parameter")
					}
					continue
				}
				if !bytes.Contains(raw, []byte(want)) {
					t.Errorf("the cassette lacks %s", want)
				}
			}
			if len(raw) > 12000 {
				t.Errorf("the cassette is %d bytes; images were not replaced?", len(raw))
			}
		})
	}
}

func TestRecordedImagePlaceholders(t *testing.T) {
	img := noisePNG(t, 40, 40)
	sum := sha256.Sum256(img)
	want := fmt.Sprintf("[image/png %d bytes sha256:%s]", len(img), hex.EncodeToString(sum[:]))
	xs := exchanges(t)
	srv := upstream(t, xs)
	rec := &Recorder{}
	for _, x := range xs[:3] {
		send(t, &http.Client{Transport: rec}, srv.URL, x)
	}
	c := rec.Cassette()
	got := []string{
		string(c.Interactions[0].Request.JSON),
		string(c.Interactions[1].Request.JSON),
		string(c.Interactions[2].Request.JSON),
	}
	for i, s := range got {
		if !strings.Contains(s, want) {
			t.Errorf("request %d body = %s, want the image replaced by %s", i, s, want)
		}
	}
	if !strings.Contains(got[1], `"image_url":"data:image/png;base64,[image/png`) {
		t.Errorf("OpenAI request body = %s, want the data: URL prefix kept", got[1])
	}
	if !strings.HasPrefix(got[0], `{"model":"claude-sonnet-4-5","max_tokens":10,"tools":`) {
		t.Errorf("Anthropic request body = %s, want the key order as sent", got[0])
	}
}

func TestRecorderMatch(t *testing.T) {
	xs := exchanges(t)
	srv := upstream(t, xs)
	rec := &Recorder{}
	for _, x := range xs[:3] {
		send(t, &http.Client{Transport: rec}, srv.URL, x)
	}
	var got []Match
	for _, it := range rec.Cassette().Interactions {
		got = append(got, *it.Request.Match)
	}
	want := []Match{
		{Model: "claude-sonnet-4-5", Tool: "computer_20250124", Display: "1280x800"},
		{Model: "gpt-5.4", Tool: "computer", Answers: []string{"call_1"}},
		{Tool: "computer_use"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded matches (-want +got):\n%s", diff)
	}
	if u := rec.Cassette().Interactions[2].Request.URL; !strings.HasSuffix(u, "/v1beta/models/gemini-3-flash:generateContent?alt=json") {
		t.Errorf("recorded Gemini URL = %q, want the key= parameter removed", u)
	}
}

func TestRecorderWriteFails(t *testing.T) {
	xs := exchanges(t)
	srv := upstream(t, xs)
	rec := &Recorder{Path: filepath.Join(t.TempDir(), "missing-dir", "rec.json")}
	req, _ := http.NewRequest("GET", srv.URL+"/blob", nil)
	resp, err := rec.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip with an unwritable Path = nil error, want one")
	}
	if !strings.Contains(err.Error(), "missing-dir") {
		t.Errorf("RoundTrip error = %v, want it to name the path", err)
	}
}

func TestRecorderConnectionError(t *testing.T) {
	rec := &Recorder{Next: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("connection refused")
	})}
	req, _ := http.NewRequest("POST", "http://upstream.invalid/v1/messages", strings.NewReader(`{}`))
	if _, err := rec.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("RoundTrip = %v, want the transport's error", err)
	}
	if n := len(rec.Cassette().Interactions); n != 0 {
		t.Errorf("recorded %d interactions after a connection error, want 0", n)
	}
}

func TestRecorderPassesBodyOn(t *testing.T) {
	var got []byte
	rec := &Recorder{Next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got, _ = io.ReadAll(r.Body)
		again, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		if b, _ := io.ReadAll(again); !bytes.Equal(b, got) {
			return nil, fmt.Errorf("GetBody gave %q, Body %q", b, got)
		}
		return &http.Response{StatusCode: 204, Header: http.Header{}, Body: http.NoBody}, nil
	})}
	const body = `{"model":"m","key":"` + anthropicKey + `"}`
	req, _ := http.NewRequest("POST", "http://upstream.invalid/x", strings.NewReader(body))
	req.Header.Set("x-api-key", anthropicKey)
	resp, err := rec.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if string(got) != body {
		t.Errorf("upstream got body %q, want %q unchanged", got, body)
	}
	c := rec.Cassette()
	if b := string(c.Interactions[0].Request.JSON); strings.Contains(b, anthropicKey) {
		t.Errorf("recorded body %s holds the key", b)
	}
	if st := c.Interactions[0].Response.Status; st != 204 {
		t.Errorf("recorded status %d, want 204", st)
	}
}

func TestStripImages(t *testing.T) {
	img := noisePNG(t, 40, 40)
	b64 := base64.StdEncoding.EncodeToString(img)
	sum := sha256.Sum256(img)
	ph := fmt.Sprintf("[image/png %d bytes sha256:%s]", len(img), hex.EncodeToString(sum[:]))
	notImage := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("just some text. "), 100))
	tests := []struct {
		name, in, want string
	}{
		{"plain base64", `{"data":"` + b64 + `"}`, `{"data":"` + ph + `"}`},
		{"data URL", `{"image_url":"data:image/png;base64,` + b64 + `"}`, `{"image_url":"data:image/png;base64,` + ph + `"}`},
		{"in an array, order kept", `{"z":1,"a":["` + b64 + `", "` + b64 + `"],"m":true}`, `{"z":1,"a":["` + ph + `", "` + ph + `"],"m":true}`},
		{"escaped slashes", `{"d":"` + strings.ReplaceAll(b64, "/", `\/`) + `"}`, `{"d":"` + ph + `"}`},
		{"base64 that is not an image", `{"d":"` + notImage + `"}`, `{"d":"` + notImage + `"}`},
		{"short image kept", `{"d":"` + base64.StdEncoding.EncodeToString(img[:64]) + `"}`, `{"d":"` + base64.StdEncoding.EncodeToString(img[:64]) + `"}`},
		{"not JSON", `data:` + b64, `data:` + b64},
		{"not base64", `{"d":"` + strings.Repeat("not base64! ", 200) + `"}`, `{"d":"` + strings.Repeat("not base64! ", 200) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(stripImages([]byte(tt.in), MinImageChars))
			if got != tt.want {
				t.Errorf("stripImages(%.60q...) = %.200q, want %.200q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	var s secrets
	s.add("Bearer "+openaiKey, false)
	s.add("short", false)        // too short to be taken from a request
	s.add("x<y>&z-secret", true) // configured: any length, HTML-escaped forms too
	tests := []struct{ in, want string }{
		{"key " + openaiKey + " end", "key " + Redacted + " end"},
		{"Bearer " + openaiKey, Redacted},
		{"short stays", "short stays"},
		{`{"t":"x\u003cy\u003e\u0026z-secret"}`, `{"t":"` + Redacted + `"}`},
		{"q=x%3Cy%3E%26z-secret", "q=" + Redacted},
	}
	for _, tt := range tests {
		if got := string(s.redact([]byte(tt.in))); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mustJSON marshals v for a test.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
