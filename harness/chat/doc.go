// Package chat adapts open models served over an OpenAI-compatible Chat
// Completions endpoint (vLLM, Ollama, LM Studio, hosted routers) to
// Spotter's harness.Model, using the official openai-go/v3 SDK's chat
// completion types and client with a configurable base URL.
//
// # Dialects
//
// Open models speak computer use in one of three ways, picked by
// Config.Dialect or guessed from the model name (DialectFor):
//
//   - UITARS15, UI-TARS 1.5: the model answers with text,
//     "Thought: ...\nAction: click(start_box='<|box_start|>(x,y)<|box_end|>')",
//     and ParseUITARS reads it. Coordinates are pixels of the image the
//     server actually showed the model: the screenshot smart-resized to
//     multiples of 28 px (screen.SmartResize), so Calls carry
//     screen.Space{Kind: screen.ResizedSpace, Resized: SmartResize(size)}.
//   - UITARS10, UI-TARS 1.0: the same text, with coordinates on a 0..1000
//     grid (a box's centre for a 4-number box): screen.Grid1000, whose far
//     edge 1000 is accepted.
//   - Functions, plain function calling: one "computer" function whose
//     arguments are an OpenAI-style action object (see DecodeArguments),
//     returned as tool_calls. Coordinates are in Config.Space, the sent
//     image's pixels by default.
//
// # UI-TARS conversations
//
// The request has the layout of UI-TARS's own deployments: the system
// message "You are a helpful assistant.", a user message with the
// computer-use instructions (Config.Prompt: Spotter's wording of UI-TARS's
// action space) and the task, then the first screenshot on its own, then
// each reply of the model and a user message with the next screenshot.
// Replies go back into the history with <|box_start|> and <|box_end|>
// restored around boxes, since servers strip those special tokens from
// the output. Only the newest images go in full (Config.Context, and never
// more than Config.MaxImages, 5 by default, as UI-TARS's deployments keep
// the 5 most recent screenshots); older ones become a placeholder text and
// all other text is kept.
//
// UI-TARS's text protocol has no call ids, so each reply becomes one Call
// with an invented, stable id ("uitars-1", "uitars-2", ...) holding the
// whole batch (several actions after "Action:" are a batch). A reply that
// cannot be parsed is one Call with DecodeErr; its Result goes back as a
// user message with the screenshot and the error in words, and the
// conversation goes on. Result errors and notes are sent the same way,
// after the screenshot.
//
// finished(content='...') ends the run: the Turn has Stop end_turn and
// the content as Text. call_user() ends it too, with Text "The model asks
// for a human's help: <thought>". If they follow other actions in a batch,
// the batch is returned first, and the next Next returns the end without
// a request.
//
// # Function calling
//
// The computer function is declared in tools. A call's arguments, a JSON
// string, are parsed first (malformed JSON is a DecodeErr), then decoded
// with openai.DecodeAction, so Spotter's extension types (navigate,
// zoom, ...) are available too. Each call is answered by a tool message
// {"role":"tool","tool_call_id":...,"content":"..."} saying what happened
// ("ok", or the error and notes), and, since most servers accept images
// only in user messages, one user message after all of them holds every
// call's screenshot (and zoom image), each labelled with its call id.
// Servers that send tool calls without ids get invented ones ("call_1"),
// and arguments sent as an object instead of a JSON string are accepted.
// In the history sent back, arguments that are not a JSON object are
// wrapped as {"invalid_arguments": "..."}: servers parse past calls'
// arguments to render them, and some reject malformed ones.
//
// # Transport
//
// All HTTP goes through Config.BaseURL with the SDK's client, over a
// transport that retries (Config.MaxRetries) connection errors, timeouts,
// 408, 409, 429 and 5xx, responses cut off part-way and 2xx bodies that are
// not a chat completion, with exponential backoff (Config.RetryWait) that
// honours Retry-After and Retry-After-Ms; Config.Timeout bounds each
// attempt. The SDK's own retries are off: they cannot see a bad 2xx body.
// When the retries run out, Next's error says what each attempt got. API
// keys never appear in Next's errors, even when the server echoes one. Usage comes from the response's usage object; open
// models on one's own server cost nothing (Config.Price sets a price for
// hosted ones). API keys, image bytes and typed text are never logged.
//
// # Application-side tools
//
// Config.Tools (Functions dialect only) are declared as function tools
// after the computer function. A call of one becomes a Call with Input (the
// arguments, which must be JSON) and no Actions, answered in its place among
// the turn's tool messages with Result.Output, or "Error: ...".
//
// # Saved state
//
// Model implements harness.Stateful. MarshalState saves the messages as
// the next request sends them (the screenshots still sent in full as data
// URLs, about 4/3 of their bytes; older ones already replaced by
// Config.Context's placeholder), the pending calls, and what the next turn
// depends on; no API key. UnmarshalState into a Model of
// the same model and dialect continues the conversation with the same
// requests.
//
// Package chattest provides a scripted fake server for tests.
package chat
