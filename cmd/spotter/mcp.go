package main

import (
	"context"
	"errors"
	"io"
)

// mcpCmd runs `spotter mcp`. Not built yet.
func mcpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return exitError{2, errors.New("mcp: not built yet")}
}
