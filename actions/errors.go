package actions

import "errors"

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrInvalid marks an action that is malformed or out of its limits.
	ErrInvalid = errors.New("invalid action")
	// ErrNotAllowed marks an action that a Policy forbids.
	ErrNotAllowed = errors.New("action not allowed")
)
