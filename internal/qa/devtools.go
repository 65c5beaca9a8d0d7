package qa

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
)

// An Evaluator runs a JavaScript expression in a display's page and returns
// its value as JSON. The DOM checks need one; displays without a DOM have
// none.
type Evaluator interface {
	Eval(ctx context.Context, expr string) (json.RawMessage, error)
}

// devTools is an Evaluator for a Chromium that also listens for DevTools
// clients on a loopback port (see startBrowser): it evaluates in the
// browser's (only) page over a connection of its own, beside the display's.
// screen/cdp exports no way to run script in a page, and this package must
// not import chromedp.
type devTools struct {
	port int
	url  string // the page to evaluate in is the one showing this URL
}

// Eval evaluates expr in the page and returns its value.
func (d *devTools) Eval(ctx context.Context, expr string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, err := d.pageSocket(ctx)
	if err != nil {
		return nil, fmt.Errorf("devtools: %w", err)
	}
	c, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		return nil, fmt.Errorf("devtools: %w", err)
	}
	defer c.CloseNow()
	c.SetReadLimit(16 << 20)
	req, _ := json.Marshal(map[string]any{"id": 1, "method": "Runtime.evaluate",
		"params": map[string]any{"expression": expr, "returnByValue": true}})
	if err := c.Write(ctx, websocket.MessageText, req); err != nil {
		return nil, fmt.Errorf("devtools: %w", err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("devtools: %w", err)
		}
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Result struct {
					Value json.RawMessage `json:"value"`
				} `json:"result"`
				Exception *struct {
					Text string `json:"text"`
				} `json:"exceptionDetails"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &msg); err != nil || msg.ID != 1 {
			continue // an event, or something else not ours
		}
		switch {
		case msg.Error != nil:
			return nil, fmt.Errorf("devtools: %s", msg.Error.Message)
		case msg.Result.Exception != nil:
			return nil, fmt.Errorf("script threw: %s", msg.Result.Exception.Text)
		}
		if len(msg.Result.Result.Value) == 0 {
			return json.RawMessage("null"), nil
		}
		return msg.Result.Result.Value, nil
	}
}

// pageSocket finds the browser's page target and returns its socket URL.
func (d *devTools) pageSocket(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(d.port)+"/json/list", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	var targets []struct {
		Type string `json:"type"`
		URL  string `json:"url"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(b, &targets); err != nil {
		return "", fmt.Errorf("target list: %w", err)
	}
	var found []string
	for _, t := range targets {
		if t.Type == "page" && t.WS != "" && t.URL == d.url {
			found = append(found, t.WS)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no page shows %s", d.url)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%d pages show %s; cannot tell which is the test's", len(found), d.url)
}
