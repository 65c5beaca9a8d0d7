// The MCP TypeScript SDK as a library inside an agent: the OpenAI Agents SDK's
// MCPServerStreamableHttp (built on @modelcontextprotocol/client) connects to
// the /mcp of a real `spotter serve`, and an Agent whose scripted model calls
// Spotter's MCP tools drives a real Chromium.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Agent, Runner, type AgentInputItem, type MCPServerStreamableHttp } from "@openai/agents";
import { spotterMCPServer } from "../src/adapters/mcp.js";
import { ScriptedModel, done, type Output } from "./scripted-model.js";
import { controls, startShop, startSpotter, type Shop, type SpotterServer } from "./helpers.js";

let calls = 0;
function computer(args: Record<string, unknown>): Output[number] {
  return {
    type: "function_call",
    callId: `call_${++calls}`,
    name: "computer",
    arguments: JSON.stringify(args),
    status: "completed",
  } as Output[number];
}

describe("Spotter's MCP tools in an agent (@openai/agents over @modelcontextprotocol/client)", () => {
  let server: SpotterServer;
  let shop: Shop;
  let mcp: MCPServerStreamableHttp;
  let session = "";

  /** Runs one agent turn whose model calls the computer tool with args; returns the tool's output as the model got it. */
  async function run(args: Record<string, unknown>): Promise<string> {
    const model = new ScriptedModel([[computer(args)], [done]]);
    const agent = new Agent({ name: "shopper", instructions: "Use the computer.", mcpServers: [mcp] });
    const result = await new Runner({ modelProvider: model.provider(), tracingDisabled: true }).run(agent, "Shop.", {
      maxTurns: 4,
    });
    assert.equal(result.finalOutput, "Done.");
    const tools = model.requests[0].tools.map((t) => t.name);
    assert.ok(tools.includes("computer"), `the agent is offered Spotter's MCP tools (${tools.join(", ")})`);
    const input = model.requests[1].input as AgentInputItem[];
    const out = input.find((it) => it.type === "function_call_result");
    assert.ok(out, "the second request carries the tool's result");
    return JSON.stringify((out as { output: unknown }).output);
  }

  before(async () => {
    shop = await startShop();
    server = await startSpotter(["--mcp-start-url", shop.url]);
    mcp = spotterMCPServer(server.spotter);
    await mcp.connect();
  });
  after(async () => {
    await mcp?.close();
    await server?.stop();
    await shop?.close();
  });

  it("completes the task in the page's state", async () => {
    const first = await run({ kind: "screenshot" });
    assert.match(first, /image\/png/, "the agent sees the page first");
    await run({ kind: "click", at: controls.name });
    await run({ kind: "type", text: "Ada Lovelace" });
    const out = await run({ kind: "click", at: controls.save });
    assert.match(out, /image\/png/, "the result carries the fresh screenshot");
    await shop.until(1);
    assert.deepEqual(shop.records, [{ action: "save", name: "Ada Lovelace" }]);
    const { data, error } = await server.spotter.api.GET("/sessions");
    assert.equal(error, undefined);
    const mcpSessions = data!.sessions.filter((s) => s.kind === "mcp");
    assert.equal(mcpSessions.length, 1, "the MCP session is a Spotter session of kind mcp");
    session = mcpSessions[0].id;
  });

  it("waits for an approval given through the HTTP API", async () => {
    const decided = server.spotter.nextApproval(session).then((a) => {
      assert.equal(a.rule, "purchase");
      assert.equal(shop.records.length, 1, "nothing is bought before the approval");
      return server.spotter.decide(a.id, { decision: "approve" });
    });
    await run({ kind: "click", at: controls.buy });
    assert.equal((await decided).status, "approved");
    await shop.until(2);
    assert.deepEqual(shop.records[1], { action: "buy" });
  });

  it("gives the agent a denial as the tool's error, with the operator's reason", async () => {
    const decided = server.spotter
      .nextApproval(session)
      .then((a) => server.spotter.decide(a.id, { decision: "deny", reason: "over the budget" }));
    const out = await run({ kind: "click", at: controls.buy });
    assert.equal((await decided).status, "denied");
    assert.match(out, /denied/);
    assert.match(out, /over the budget/);
    assert.equal(shop.records.length, 2, "the denied purchase never reached the page");
  });

  it("gives the agent a policy refusal as the tool's error", async () => {
    const out = await run({ kind: "keypress", keys: ["ctrl", "w"] });
    assert.match(out, /Control\+w is not allowed/);
  });
});
