// The OpenAI Agents SDK from npm runs an Agent with computerTool over a
// SpotterComputer, on a model of the test's own (the SDK's ModelProvider) that
// scripts computer_call items, against a real `spotter serve` and Chromium.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Agent, Runner, type AgentInputItem, type ModelRequest } from "@openai/agents";
import { SpotterComputer } from "../src/adapters/openai-agents.js";
import { ScriptedModel, done, type Output } from "./scripted-model.js";
import { at, controls, display, pngSize, startShop, startSpotter, type Shop, type SpotterServer } from "./helpers.js";

let calls = 0;
function computerCall(...actions: Record<string, unknown>[]): Output[number] {
  return { type: "computer_call", callId: `call_${++calls}`, status: "completed", actions } as Output[number];
}

/** Runs one agent turn whose model makes `call` and then says it is done; returns the model's requests. */
async function run(computer: SpotterComputer, call: Output[number]): Promise<ModelRequest[]> {
  const model = new ScriptedModel([[call], [done]]);
  const agent = new Agent({ name: "shopper", instructions: "Use the computer.", tools: [computer.tool()] });
  const result = await new Runner({ modelProvider: model.provider(), tracingDisabled: true }).run(agent, "Shop.", {
    callModelInputFilter: computer.callModelInputFilter,
    maxTurns: 4,
  });
  assert.equal(result.finalOutput, "Done.");
  return model.requests;
}

/** The items the model was sent after the computer call: its output and what follows it. */
function afterCall(requests: ModelRequest[]): AgentInputItem[] {
  const input = requests[1].input;
  assert.ok(Array.isArray(input));
  const i = input.findIndex((it) => it.type === "computer_call_result");
  assert.ok(i >= 0, "the second request carries the computer call's result");
  return input.slice(i);
}

function screenshotOf(item: AgentInputItem): string {
  assert.equal(item.type, "computer_call_result");
  const url = (item as { output: { data: string } }).output.data;
  assert.match(url, /^data:image\/png;base64,/);
  return url.slice(url.indexOf(",") + 1);
}

function textOf(item: AgentInputItem | undefined): string {
  if (!item || !("role" in item) || item.role !== "user") return "";
  return typeof item.content === "string" ? item.content : JSON.stringify(item.content);
}

describe("SpotterComputer (@openai/agents)", () => {
  let server: SpotterServer;
  let shop: Shop;
  let computer: SpotterComputer;

  before(async () => {
    [server, shop] = await Promise.all([startSpotter(), startShop()]);
    computer = await SpotterComputer.open(server.spotter, { start_url: shop.url, display });
  });
  after(async () => {
    await computer?.close();
    await server?.stop();
    await shop?.close();
  });

  it("is sized by Spotter and completes the task in the page's state", async () => {
    const image = computer.session.image;
    assert.deepEqual(computer.dimensions, [image.w, image.h]);
    assert.ok(image.w < display.width, `Spotter sizes the image for the model (${image.w}x${image.h})`);
    const [nx, ny] = at(controls.name, image);
    const [sx, sy] = at(controls.save, image);
    const requests = await run(
      computer,
      computerCall(
        { type: "click", x: nx, y: ny, button: "left" },
        { type: "type", text: "Ada Lovelace" },
        { type: "click", x: sx, y: sy, button: "left" },
      ),
    );
    await shop.until(1);
    assert.deepEqual(shop.records, [{ action: "save", name: "Ada Lovelace" }]);
    const [result, next] = afterCall(requests);
    assert.deepEqual(pngSize(screenshotOf(result)), image, "the model gets the image Spotter sized");
    assert.equal(textOf(next), "", "nothing failed, so nothing is said");
  });

  it("waits for an approval given through the HTTP API", async () => {
    const [bx, by] = at(controls.buy, computer.session.image);
    const decided = computer.session.nextApproval().then(async (a) => {
      assert.equal(a.rule, "purchase");
      assert.equal(shop.records.length, 1, "nothing is bought before the approval");
      return server.spotter.decide(a.id, { decision: "approve" });
    });
    await run(computer, computerCall({ type: "click", x: bx, y: by, button: "left" }));
    assert.equal((await decided).status, "approved");
    await shop.until(2);
    assert.deepEqual(shop.records[1], { action: "buy" });
  });

  it("tells the agent a denial, with the operator's reason", async () => {
    const [bx, by] = at(controls.buy, computer.session.image);
    const decided = computer.session
      .nextApproval()
      .then((a) => server.spotter.decide(a.id, { decision: "deny", reason: "over the budget" }));
    const requests = await run(
      computer,
      computerCall({ type: "click", x: bx, y: by, button: "left" }, { type: "type", text: "never typed" }),
    );
    assert.equal((await decided).status, "denied");
    const [result, note] = afterCall(requests);
    assert.deepEqual(pngSize(screenshotOf(result)), computer.session.image, "a denied call still has a fresh screenshot");
    assert.match(textOf(note), /denied/);
    assert.match(textOf(note), /over the budget/);
    assert.equal(shop.records.length, 2, "the denied purchase never reached the page");
    assert.ok(
      !computer.results.some((r) => JSON.stringify(r.result).includes("never typed")),
      "the batch's later action did not run",
    );
  });

  it("tells the agent a policy refusal", async () => {
    const requests = await run(computer, computerCall({ type: "keypress", keys: ["CTRL", "W"] }));
    const [, note] = afterCall(requests);
    assert.match(textOf(note), /forbidden|not allowed/i);
    assert.match(textOf(note), /control\+w/i);
  });
});
