package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/mcp"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// mcpSessions is how many MCP sessions the mcp section opens on each
// set-up.
const mcpSessions = 6

// mcpMemory measures the memory an MCP session costs: mcpSessions clients
// of an mcp.Server, each with its default session on the bench site's
// static page and a screenshot taken, the memory of this process and its
// browsers (PSS) before and after, divided by the sessions. Set-ups: the
// sessions as browser contexts of one shared browser (spotter mcp's
// default, --browsers 1), and a browser each (--browsers 0), the baseline.
func (r *runner) mcpMemory(ctx context.Context) error {
	var pool *cdp.Pool
	defer func() {
		if pool != nil {
			pool.Close(context.Background())
		}
	}()
	each, err := r.mcpSetup(ctx, "a browser each (--browsers 0)", func(ctx context.Context) (mcp.Display, error) {
		return cdp.Open(ctx, cdp.Config{Exec: r.o.Headless, Viewport: modelSize})
	})
	if err != nil {
		return err
	}
	pool, err = cdp.LaunchPool(ctx, cdp.Config{Exec: r.o.Headless}, 1)
	if err != nil {
		return err
	}
	shared, err := r.mcpSetup(ctx, "contexts of one shared browser (--browsers 1, the default)", func(ctx context.Context) (mcp.Display, error) {
		return pool.NewDisplay(ctx, cdp.DisplayConfig{Viewport: modelSize})
	})
	if err != nil {
		return err
	}
	shared.against(each)
	r.report(each)
	r.report(shared)
	return nil
}

// mcpSetup opens mcpSessions MCP sessions on displays of open and returns
// the memory each added.
func (r *runner) mcpSetup(ctx context.Context, name string, open func(context.Context) (mcp.Display, error)) (Figure, error) {
	srv, err := mcp.New(mcp.Config{NewDisplay: open, StartURL: r.site.url(pageStatic), Policy: actions.Standard(),
		MaxSessions: mcpSessions, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return Figure{}, err
	}
	defer srv.Close(context.WithoutCancel(ctx))
	before, err := treePSS(os.Getpid())
	if err != nil {
		return Figure{}, err
	}
	for i := range mcpSessions {
		st, ct := sdk.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(ctx, st, nil)
		if err != nil {
			return Figure{}, err
		}
		defer ss.Close()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			return Figure{}, err
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolComputer, Arguments: map[string]any{"kind": "screenshot"}})
		if err != nil || res.IsError {
			return Figure{}, fmt.Errorf("%s: session %d: %v %+v", name, i+1, err, res)
		}
	}
	after, err := treePSS(os.Getpid())
	if err != nil {
		return Figure{}, err
	}
	per := float64(after-before) / mcpSessions / 1e6
	return Figure{Section: "mcp", Name: "memory per MCP session, " + name, Unit: "MB", Value: per,
		Note: fmt.Sprintf("%d sessions added %.0f MB (PSS of spotter and its browsers)", mcpSessions, float64(after-before)/1e6)}, nil
}
