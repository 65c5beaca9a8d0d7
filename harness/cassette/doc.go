// Package cassette records a model provider's HTTP exchanges to a file and
// replays them later, so that the real provider adapter (harness/anthropic,
// harness/openai, harness/gemini) runs offline against recorded answers.
//
// # Recording
//
// A Recorder is an http.RoundTripper that wraps the adapter's transport:
//
//	rec := &cassette.Recorder{Path: "run.json", Secrets: []string{apiKey}}
//	m, err := anthropic.New(anthropic.Config{APIKey: apiKey, HTTPClient: &http.Client{Transport: rec}, ...})
//
// Each finished exchange becomes one Interaction, and the whole cassette is
// rewritten (atomically) after each one, so a run that dies keeps what it
// recorded. What is written, and what is not:
//
//   - The request's method and URL, with the secret query parameters
//     (SecretParams: Gemini's key=, ...) removed.
//   - Only the request headers in RequestHeaders (and Recorder.Header):
//     content type and the providers' version and beta headers. The
//     SDKs' telemetry headers are noise in a diff and are dropped.
//   - Only the response headers in ResponseHeaders (and Recorder.Header):
//     content type, request ids, retry hints, rate limits.
//   - The headers in SecretHeaders (Authorization, x-api-key,
//     x-goog-api-key, api-key, OpenAI-Organization, OpenAI-Project,
//     cookies, ...) are never written, even if Recorder.Header names them.
//     Their values, the secret query parameters' values and
//     Recorder.Secrets are redacted ("[REDACTED]") wherever they appear
//     in a URL, a kept header or a body.
//   - A base64 image in a request body (a JSON string, plain or a data:
//     URL, of at least MinImageChars characters that decodes to an image)
//     is replaced by a placeholder that gives its type, its decoded size
//     and its SHA-256, such as "[image/png 48213 bytes sha256:9f2c...]".
//     The hash is that of the image file, so it can be compared with the
//     screenshots a trace keeps. Screenshots are most of a request's
//     bytes, so this keeps a cassette small and diffable.
//   - A JSON body is kept as JSON (key order as sent), any other text as a
//     string, anything else as base64. A gzip-encoded response is stored
//     decoded.
//   - Match, a summary of the request that replay checks (see below).
//
// A connection error (no response) is not recorded.
//
// # The file
//
// A cassette is one indented JSON document, so that a change to a
// recording shows as a readable diff, and so that cassettes can be written
// by hand (examples/cassettes/demo-anthropic.json is). A path ending in
// ".gz" is gzipped. Unknown fields are an error, which catches typos in
// hand-written files.
//
//	{
//	  "version": 1,
//	  "comment": "what this recording is",
//	  "interactions": [
//	    {
//	      "request": {
//	        "method": "POST",
//	        "url": "https://api.anthropic.com/v1/messages?beta=true",
//	        "header": {"anthropic-beta": "computer-use-2025-01-24", ...},
//	        "match": {"model": "claude-sonnet-4-5", "tool": "computer_20250124",
//	                  "display": "1280x800", "answers": ["toolu_01..."]},
//	        "body": {...}
//	      },
//	      "response": {"status": 200, "header": {...}, "body": {...}}
//	    }
//	  ]
//	}
//
// A body is "body" (JSON), "body_text" (a string) or "body_base64".
//
// # Replay and what it matches on
//
// A Player answers requests with the recorded responses strictly in order:
// the n-th request gets the n-th interaction's response, wherever it was
// sent. Player.RoundTrip (and Player.Client) does this in memory, with no
// port, for adapters that take an http.Client; Player.Serve listens on
// 127.0.0.1 for those that only take a base URL.
//
// Before answering, the request is checked against the recorded one:
//
//   - the method;
//   - the URL path, exactly, and the query with secret parameters removed
//     (the scheme and host are not compared: replay runs elsewhere);
//   - the Match of its JSON body against the recorded Match:
//     model (the body's "model"), tool (the type of the computer tool
//     declared, e.g. "computer_20250124", "computer_use_preview",
//     "computer_use" for Gemini) and display (the display size declared
//     with that tool, "1280x800") when the recorded value is not empty;
//     and always answers, the set of tool-call ids the request answers
//     (see MatchBody). A recorded request with neither "match" nor "body"
//     is checked on method, path and query only.
//
// Nothing else is compared: not headers, not the text of the task or of
// the results, and not images, whose bytes the cassette no longer has. A
// replayed run therefore proves that the adapter sends well-formed,
// correctly paired requests for the recorded model and tool and decodes the
// recorded answers; it does not prove that the screenshots look as they did.
//
// A request that does not match is answered with HTTP 400 and a body that
// says, field by field, what differs, in an error object that Anthropic's,
// OpenAI's and Gemini's SDKs all read; the Player does not advance, and it
// keeps the mismatch, which Player.Err reports along with any interaction
// never played. A run that replayed a cassette must call Player.Err when
// it ends: a model that gave up after a mismatch can look like a normal
// end of the run.
package cassette
