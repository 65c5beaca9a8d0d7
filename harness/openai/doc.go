// Package openai adapts OpenAI's Responses API computer tool to Spotter's
// harness.Model, using the official openai-go/v3 SDK.
//
// # Tools and actions
//
// Two tool versions exist, picked by model name (Config.Tool overrides):
//
//   - ToolPreview, for "computer-use-preview...": the tool
//     {"type":"computer_use_preview","display_width","display_height","environment"}
//     and one "action" per computer_call.
//   - ToolGA, for every other model: the tool {"type":"computer"} with no
//     display size (the model takes it from the screenshots) and an
//     "actions" batch per computer_call. A legacy "action" is read when
//     "actions" is absent.
//
// DecodeAction and DecodeActions turn OpenAI action objects into canonical
// actions in the sent image's pixels (screen.Image); they are independent
// of the SDK, so scripts can replay OpenAI-shaped turns with them, and
// EncodeAction is their inverse. Config.Functions can also declare Spotter
// extension actions (navigate, go_back, zoom, ...) as ordinary function
// tools: a function_call's arguments, a JSON string, are decoded as the
// fields of the extension type of the same name.
//
// A call that cannot be decoded (bad JSON, unknown action type or
// function, missing fields) is returned with Call.DecodeErr set, never
// dropped; the loop answers it with an error result and the conversation
// goes on. Calls are paired with their results by call_id, never by the
// item id.
//
// # Results
//
// A computer_call is answered by a computer_call_output holding the fresh
// screenshot as a data URL, the page URL as output.current_url (the
// placement of OpenAI's reference agent; PROVIDERS.md marks it unverified,
// and Model.computerOutput is the one place that decides it), and, in
// acknowledged_safety_checks, only the pending checks listed in
// Result.Acknowledged. computer_call_output has no field for text, so errors,
// notes, the pointer position and display events of all the calls of a turn
// follow the outputs as one user message, each line naming its call_id. The
// screenshot is sent even for a failed call, and even when it is the same
// as the last one: the output must hold an image, and the GA tool reads the
// display size from it. A function_call is answered by a
// function_call_output with a text part ("ok" or what failed) and an image
// part (the zoomed image for zoom, else the fresh screenshot; when the
// screenshot is the same as the last one sent, no image and the text says
// that the screen did not change).
//
// # Conversation state: the full input on every request
//
// The Model keeps the conversation itself and sends all of it on every
// request, with store=false and include=["reasoning.encrypted_content"] so
// that reasoning items can be passed back without OpenAI storing anything.
// It does not chain requests with previous_response_id, because:
//
//   - Zero data retention organizations cannot store responses, and
//     previous_response_id needs stored ones (Config.Store turns storing on
//     for those who want it, but state stays local).
//   - Each request is self-contained, so a recorded request replays as is
//     (cassettes, golden files), and what the model saw is exactly what the
//     trace holds.
//   - A session can resume after a crash from its own database without
//     depending on OpenAI's retention of earlier responses.
//   - Truncation stays in our hands: the preview model needs
//     truncation="auto", which is sent for it; for GA models nothing is
//     dropped silently, and Config.Context bounds the request size.
//
// Config.Context (package ctxpolicy) keeps the payload bounded: only the
// newest screenshots go in full; an older computer_call_output holds a
// 16x10 grey placeholder image instead (the output must hold an image),
// and an older function_call_output or task message the placeholder's
// words. Screenshots are replaced a chunk at a time, so the input stays
// byte for byte the same between replacements and OpenAI's automatic
// prompt cache keeps matching its prefix; Config.PromptCacheKey can route
// a session to one cache.
//
// Output items, reasoning items in particular, are passed back unchanged:
// the raw JSON received is sent again as an SDK param override, so every
// field and value survives, including ones this SDK version does not know
// (the JSON encoder only compacts whitespace and escapes <, > and &).
//
// # Transport
//
// All HTTP goes through Config.BaseURL with the SDK's client, over a
// transport that retries (Config.MaxRetries) connection errors, timeouts,
// 408, 409, 429 and 5xx, responses cut off part-way and 2xx bodies that are
// not a Responses API response, with exponential backoff
// (Config.RetryWait) that honours Retry-After and Retry-After-Ms;
// Config.Timeout bounds each attempt. The SDK's own retries are off: they
// cannot see a bad 2xx body. When the retries run out, Next's error says
// what each attempt got, and never holds the API key. The SDK's environment variables are not read here: cmd/ calls
// ConfigFromEnv. API keys and image bytes are never logged.
//
// Usage per turn comes from the response; its cost is an estimate from a
// small built-in price table (Config.Price overrides it).
//
// # Application-side tools
//
// Config.Tools are declared as function tools after the computer tool (and
// Config.Functions). A function_call of one becomes a Call with Input (the
// arguments, which must be JSON; empty means {}) and no Actions. It is
// answered by a function_call_output whose output is Result.Output, or
// "Error: ..." (the item has no error flag), in the call's place among the
// turn's outputs, so mixed turns pair every output to its call_id in order.
//
// # Saved state
//
// Model implements harness.Stateful. MarshalState saves every input item as
// JSON as the next request sends it (the screenshots still sent in full as
// data URLs, about 4/3 of their bytes; older ones as their placeholders),
// the pending calls with their safety checks, the last screenshot sent and
// what Config.Context goes by; no API key. A state saved before
// Config.Context (format version 1) is read too. UnmarshalState into a
// Model of the same model and tool continues the conversation with the
// same requests.
//
// # Executor codec
//
// DecodeCall reads one item into a Call: a computer_call (GA or preview,
// with its pending_safety_checks), or a function_call of the browser
// functions (list_tabs, switch_tab, close_tab, dialog, upload) that a
// Model declares with Config.Functions = BrowserFunctions(), as a task's
// browser_tools does; any other function is the call's error.
// EncodeResultFor writes the computer_call_output for the same call_id,
// with the screenshot as a data URL and the approved checks in
// acknowledged_safety_checks, or the function_call_output, with the text
// and the screenshot at the image detail a Model of the client's model
// name sends; ResultMessage is the user message with the text a
// computer_call_output has no place for. They are the Model's own decoder
// and encoder.
//
// A Result from harness.Executor repeats its screenshot's Events in its
// Notes; the text sent for a call says each once.
//
// Package openaitest provides a scripted fake server for tests.
package openai
