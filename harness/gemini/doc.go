// Package gemini is Spotter's model adapter for Gemini computer use, through
// the official SDK (google.golang.org/genai) and the generateContent REST API.
//
// A Model declares the computer_use tool (environment ENVIRONMENT_BROWSER by
// default, with excluded predefined functions) and any ordinary functions of
// Config.Custom, keeps the conversation (the model's contents are echoed back
// exactly as received, so function call ids and thought signatures survive),
// and decodes every functionCall into a harness.Call of canonical actions.
//
// Coordinates are integers on Gemini's 1000x1000 grid, 0..999, so every Call
// has Space screen.Grid1000: package screen maps them to pixels. Scroll
// magnitudes are in the same grid units and go into DeltaX/DeltaY unchanged.
//
// Gemini has two families of predefined functions (FunctionSet), picked by
// model name (FunctionSetFor) or by Config.Functions:
//
//	legacy (2.5 Computer Use, 3 Flash)  open_web_browser, click_at, hover_at, type_text_at, scroll_document,
//	                                    scroll_at, wait_5_seconds, go_back, go_forward, search, navigate,
//	                                    key_combination, drag_and_drop
//	3.5                                 click, double_click, triple_click, middle_click, right_click, mouse_down,
//	                                    mouse_up, move, type, drag_and_drop, wait, press_key, key_down, key_up,
//	                                    hotkey, take_screenshot, scroll, go_back, go_forward, navigate
//
// key_down and key_up have no canonical action (a key cannot stay held
// between calls, and HoldKey needs a duration), so they are always in
// excluded_predefined_functions and a call to them is a DecodeErr that tells
// the model to use hotkey or press_key instead.
//
// Each Result becomes a functionResponse with the call's id and name, a
// response object and the screenshot as an inline part:
//
//	{"functionResponse": {"id": ..., "name": ..., "response": {"url": ..., "error"?: ..., "notes"?: [...],
//	  "safety_acknowledgement"?: "true"}, "parts": [{"inlineData": {"mimeType": "image/png", "data": ...}}]}}
//
// Notes and the screenshot's Events go in response.notes, each once (a
// harness.Executor's Result repeats the Events in Notes); a cursor position
// (only a Config.Custom function can ask for one) in response.cursor, in
// grid units; a zoom image follows the screenshot in parts. A failed call
// still carries its screenshot; its error text goes in response.error. All responses to one turn travel in one user content. A
// call with args.safety_decision becomes a harness.SafetyCheck whose ID is
// the call's ID; its response says safety_acknowledgement "true" only when
// the Result lists the check in Acknowledged. The API may reject a
// conversation that leaves a safety decision unacknowledged, so a loop
// should end the session after a human denies one (the reference
// implementation does).
//
// The 3.5 set's per-call "intent" argument is not decoded; it stays in
// Call.Raw for the trace. A call with no id gets a synthetic Call.ID
// ("gemini-call-N") and its response carries no id, as it came.
//
// Usage comes from usageMetadata; CostUSD is an estimate from a small price
// table. The SDK's own retry ignores Retry-After, so the Model retries
// itself (Config.MaxRetries): connection errors, timeouts, 408, 409, 429
// and 5xx, responses cut off part-way and 2xx bodies that are not a
// GenerateContentResponse, honouring Retry-After and Google's RetryInfo.
// When the retries run out, Next's error says what each attempt got; API
// keys never appear in it, even when the endpoint echoes one.
// The wire uses the REST API's camelCase names (computerUse,
// excludedPredefinedFunctions, functionResponse, thoughtSignature); the API
// accepts them as it accepts the snake_case ones.
//
// # Application-side tools
//
// Config.Tools are declared as function declarations with
// parametersJsonSchema, beside computer_use (and Config.Custom). A call of
// one becomes a Call with Input (the args as JSON) and no Actions, and is
// answered in its place among the turn's function responses with
// {"output": Result.Output}, or {"error": ...}, under the call's id and
// name.
//
// # Saved state
//
// Model implements harness.Stateful. MarshalState saves the history as
// genai contents, as the next request sends it (the screenshots
// Config.Context still sends in full inline, base64: about 4/3 of their
// bytes; older ones already replaced; thought signatures kept exactly),
// the pending calls, the call count and what Config.Context goes by; no
// API key. UnmarshalState into a Model of the same
// model and function set continues the conversation with the same
// requests.
//
// # Executor codec
//
// DecodePart reads one part holding a functionCall into a Call: exactly
// the functions a Model declares with Config.Browser, decoded by that
// Model's own decoder. Those are the predefined functions of the set
// (given, or picked by the function's name) except key_down and key_up,
// and the browser functions list_tabs, switch_tab, close_tab, dialog and
// upload (tabs, JavaScript dialogs, file choosers); args left out mean no
// arguments, as for a Model. EncodeResult writes the functionResponse
// part for the same id and name, with the screenshot as inline data and
// the safety acknowledgement when a human approved, as the Model writes
// it.
//
// Gemini may leave a call's id out. DecodePart then gives the call a fresh
// Call.ID, "gemini-call-" and random letters (not the Model's
// "gemini-call-N", which counts within one turn), so two such calls are
// never taken for one: the executor API runs such a call each time it is
// posted, under a new id. Its functionResponse carries no id and pairs it
// by name, as Gemini pairs calls without ids.
package gemini
