package local_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/isolate/local"
)

// A local sandbox is an egress proxy on the host's loopback; its browsers
// (Sandbox.Browser) send every request through it.
func ExampleStart() {
	ctx := context.Background()
	sb, err := local.Start(ctx, isolate.Config{
		Name:   "example",
		Egress: egress.Policy{Allow: []string{"example.com"}},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	proxy := &url.URL{Scheme: "http", Host: sb.ProxyAddr()}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	resp, err := client.Get("http://evil.test/")
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("X-Spotter-Egress"))
	fmt.Println(sb.Health(ctx))
	sb.Close(ctx)
	fmt.Println(sb.Health(ctx))
	// Output:
	// 403 Forbidden refused
	// <nil>
	// local sandbox is closed: sandbox is dead
}
