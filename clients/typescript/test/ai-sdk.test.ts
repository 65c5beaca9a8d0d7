// The Vercel AI SDK from npm runs generateText with Anthropic's computer tool
// (computer_20250124, @ai-sdk/anthropic) whose execute goes through Spotter,
// driven by the SDK's mock language model (ai/test), against a real
// `spotter serve` and Chromium.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from "@ai-sdk/provider";
import { ExecutorSession } from "../src/index.js";
import { openAnthropicSession, spotterComputerTool } from "../src/adapters/ai-sdk.js";
import { at, controls, display, pngSize, startShop, startSpotter, type Shop, type SpotterServer } from "./helpers.js";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
let ids = 0;

/** A step in which the model calls the computer tool with input. */
function toolCall(input: Record<string, unknown>): LanguageModelV4GenerateResult {
  return {
    content: [{ type: "tool-call", toolCallId: `toolu_${++ids}`, toolName: "computer", input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls", raw: "tool_use" },
    usage,
    warnings: [],
  };
}
const done: LanguageModelV4GenerateResult = {
  content: [{ type: "text", text: "Done." }],
  finishReason: { unified: "stop", raw: "end_turn" },
  usage,
  warnings: [],
};

/** What the model was sent as the tool's result in its second step. */
function toolResult(calls: LanguageModelV4CallOptions[]) {
  const msg = calls[1].prompt.find((m) => m.role === "tool");
  assert.ok(msg && msg.role === "tool", "the second step carries the tool's result");
  const part = msg.content.find((p) => p.type === "tool-result");
  assert.ok(part && part.type === "tool-result");
  return part.output;
}

/** Runs one generateText whose model makes one computer call and then says it is done. */
async function run(session: ExecutorSession, input: Record<string, unknown>) {
  const model = new MockLanguageModelV4({ doGenerate: [toolCall(input), done] });
  const result = await generateText({
    model,
    tools: { computer: spotterComputerTool(session) },
    prompt: "Shop.",
    stopWhen: stepCountIs(3),
  });
  assert.equal(result.text, "Done.");
  assert.equal(model.doGenerateCalls.length, 2);
  const tools = model.doGenerateCalls[0].tools ?? [];
  assert.deepEqual(
    tools.map((t) => [t.type, t.type === "provider" ? t.id : "", t.type === "provider" ? t.args : {}]),
    [["provider", "anthropic.computer_20250124", { displayWidthPx: session.image.w, displayHeightPx: session.image.h }]],
    "the model is offered Anthropic's computer tool at Spotter's image size",
  );
  return toolResult(model.doGenerateCalls);
}

describe("Anthropic's computer tool through Spotter (ai, @ai-sdk/anthropic)", () => {
  let server: SpotterServer;
  let shop: Shop;
  let session: ExecutorSession;

  before(async () => {
    [server, shop] = await Promise.all([startSpotter(), startShop()]);
    session = await openAnthropicSession(server.spotter, {
      start_url: shop.url,
      display,
      model: { name: "claude-sonnet-4-5" },
    });
  });
  after(async () => {
    await session?.close();
    await server?.stop();
    await shop?.close();
  });

  it("completes the task in the page's state, with screenshots of Spotter's size", async () => {
    assert.ok(session.image.w < display.width, `Spotter sizes the image for the model (${session.image.w}x${session.image.h})`);
    await run(session, { action: "left_click", coordinate: at(controls.name, session.image) });
    await run(session, { action: "type", text: "Ada Lovelace" });
    const out = await run(session, { action: "left_click", coordinate: at(controls.save, session.image) });
    await shop.until(1);
    assert.deepEqual(shop.records, [{ action: "save", name: "Ada Lovelace" }]);
    assert.equal(out.type, "content");
    const image = out.type === "content" ? out.value.find((p) => p.type === "file") : undefined;
    assert.ok(image && image.type === "file" && image.data.type === "data", "the result carries the screenshot");
    assert.equal(image.mediaType, "image/png");
    assert.deepEqual(pngSize(String(image.data.data)), session.image);
  });

  it("waits for an approval given through the HTTP API", async () => {
    const decided = session.nextApproval().then((a) => {
      assert.equal(a.rule, "purchase");
      assert.equal(shop.records.length, 1, "nothing is bought before the approval");
      return server.spotter.decide(a.id, { decision: "approve" });
    });
    const out = await run(session, { action: "left_click", coordinate: at(controls.buy, session.image) });
    assert.equal((await decided).status, "approved");
    assert.equal(out.type, "content");
    await shop.until(2);
    assert.deepEqual(shop.records[1], { action: "buy" });
  });

  it("gives the model a denial as the tool's error, with the operator's reason", async () => {
    const decided = session
      .nextApproval()
      .then((a) => server.spotter.decide(a.id, { decision: "deny", reason: "over the budget" }));
    const out = await run(session, { action: "left_click", coordinate: at(controls.buy, session.image) });
    assert.equal((await decided).status, "denied");
    assert.equal(out.type, "error-text");
    assert.match(String(out.type === "error-text" && out.value), /denied.*over the budget/);
    assert.equal(shop.records.length, 2, "the denied purchase never reached the page");
  });

  it("gives the model a policy refusal as the tool's error", async () => {
    const out = await run(session, { action: "key", text: "ctrl+w" });
    assert.equal(out.type, "error-text");
    assert.match(String(out.type === "error-text" && out.value), /Control\+w is not allowed/);
  });
});
