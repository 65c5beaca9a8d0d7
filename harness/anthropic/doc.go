// Package anthropic is Spotter's adapter for Anthropic's Messages API and its
// computer tool. A Model implements harness.Model: it declares the computer
// tool in the version the model was trained on (computer_20241022,
// computer_20250124 or computer_20251124, with its beta header), keeps the
// conversation, decodes each tool_use block into canonical actions in the
// sent image's pixels (screen.Image), and answers the loop's results with one
// tool_result per tool_use id, the screenshot paired to it.
//
// Choices this package makes, in one place:
//
//   - The tool version comes from a table of model families (ToolVersionFor);
//     Config.Tool overrides it. An unknown model gets the newest version.
//   - display_width_px and display_height_px are Config.Display, the size of
//     the image actually sent. A screenshot of any other size is refused
//     (ErrDisplaySize), because the model would answer in the wrong space.
//   - computer_20241022 clicks act at the cursor: they decode without a
//     point (Action.HasAt false) unless the model gives a coordinate anyway.
//     Its left_click_drag goes from the cursor to coordinate; the adapter
//     tracks where its own actions left the pointer (and what
//     cursor_position reported), and a drag whose start is unknown is a
//     decode error that asks the model to move the mouse first.
//   - Each version decodes only its own actions; unknown actions and calls
//     of undeclared tools come back as Calls with DecodeErr, never dropped.
//   - scroll_amount counts wheel clicks; one click is PixelsPerScrollClick
//     (53) pixels of the sent image, what Chromium on Linux scrolls per
//     wheel notch at full size: on a smaller image (a 1920x1080 viewport
//     is sent at 1456x819) a click scrolls 70 CSS px.
//   - Modifiers held during a click or scroll come from "text" (never from a
//     "key" field).
//   - A turn that stopped at max_tokens never runs: every call in it comes
//     back with DecodeErr wrapping ErrTruncated.
//   - pause_turn is handled inside Next by re-sending the paused turn up to
//     Config.MaxPauses times; after that Next returns StopPause and the next
//     call with an empty Input resumes.
//   - A refused turn (stop_reason "refusal") is dropped from the
//     conversation, as Anthropic advises, and its calls are not returned.
//   - A failed call is answered with is_error and text; its screenshot is
//     attached only when some of its actions ran (the screen may have
//     changed), so a call that never ran costs no image tokens.
//   - Config.Context (package ctxpolicy) decides which screenshots go in
//     full: the newest few; older ones become a placeholder text block, a
//     chunk at a time; a screenshot identical to the last one sent is
//     replaced by words saying the screen did not change.
//   - Prompt caching: cache_control on the tool, on the system prompt, on
//     the last block of the newest user message, and, once screenshots
//     have been replaced, on the block before the oldest one still sent:
//     that prefix stays the same until the next chunk is replaced, which
//     then reads it from the cache and writes only what follows.
//
// # Application-side tools
//
// Config.Tools are declared as custom tools ({"name", "description",
// "input_schema"}) after the computer tool. A tool_use of one becomes a
// Call with Input (the block's input, as sent) and no Actions; it is
// answered, in the call's place among the turn's tool_result blocks, with a
// tool_result whose text is Result.Output, or "Error: ..." with is_error.
// A turn may mix computer and client calls; every tool_use id gets its
// tool_result in the order of the calls.
//
// # Transport
//
// Requests go through the SDK's client over a transport that retries
// (Config.MaxRetries) connection errors, timeouts, 408, 409, 429, 5xx and
// 529, responses cut off part-way and 2xx bodies that are not a Messages
// API message, with exponential backoff (Config.RetryWait) that honours
// retry-after-ms and retry-after; Config.Timeout bounds each attempt. The
// SDK's own retries are off: they cannot see a bad 2xx body. When the
// retries run out, Next's error (wrapping ErrAPI) says what each attempt
// got. API keys never appear in Next's errors or logs, even when the
// endpoint echoes one.
//
// # Saved state
//
// Model implements harness.Stateful. MarshalState saves the messages (as
// the Messages API params, as the next request sends them: the screenshots
// still sent in full as base64, about 4/3 of their bytes, older ones
// already replaced), the pending calls, a paused turn, the pointer position
// and what Config.Context goes by; no API key. UnmarshalState into a Model of the same
// model and tool version continues the conversation: its next request is
// byte for byte the one the saving Model would have sent.
//
// # Executor codec
//
// DecodeCall and EncodeResult serve clients that run their own agent loop:
// DecodeCall reads one computer tool_use block (actions of
// ExecutorVersion) into a Call, EncodeResult writes a Result as the
// tool_result block for the same tool_use_id, with the screenshot as a
// base64 image. They are the Model's own decoder and encoder.
package anthropic
