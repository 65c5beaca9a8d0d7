package anthropic

import "errors"

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrTruncated marks a call of a turn that stopped at max_tokens (or
	// at the context window): its input may be cut off, so it never runs.
	ErrTruncated = errors.New("the tool call was cut off by the output token limit and did not run")
	// ErrUnknownTool marks a call of a tool that was never declared.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrDisplaySize marks a screenshot whose size is not the declared
	// display size: the model would answer in the wrong coordinate space.
	ErrDisplaySize = errors.New("screenshot size differs from the declared display size")
	// ErrInput marks an Input that does not fit the conversation, such as
	// a wrong number of Results.
	ErrInput = errors.New("input does not fit the conversation")
	// ErrAPI marks an error status from the Messages API, after retries.
	ErrAPI = errors.New("anthropic API error")
	// ErrStop marks a stop reason this package does not know.
	ErrStop = errors.New("unknown stop reason")
)
