package egress_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/spotter-harness/spotter/isolate/egress"
)

func ExampleProxy() {
	p, err := egress.New(egress.Config{
		Policy: egress.Policy{Allow: []string{"example.com", "127.0.0.1:8080"}},
		OnDecision: func(d egress.Decision) {
			fmt.Printf("decision: %s %s:%s allowed=%v\n", d.Method, d.Host, d.Port, d.Allowed)
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	defer func() { stop(); <-done }()

	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()})}}
	resp, err := client.Get("http://evil.test/")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status)
	fmt.Println(strings.Contains(string(body), "spotter egress: evil.test is not in this session&#39;s allowlist"))
	// Output:
	// decision: GET evil.test:80 allowed=false
	// 403 Forbidden
	// true
}
