package main

import (
	"context"
	"errors"
	"io"
)

// testCmd runs `spotter test`. Not built yet.
func testCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return exitError{2, errors.New("test: not built yet")}
}
