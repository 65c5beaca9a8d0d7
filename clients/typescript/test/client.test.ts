// The client against a real `spotter serve`: the spec it was generated from is
// the one the server answers, failures are typed exceptions with the server's
// reason, and an event stream resumes after the last event seen.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import {
  ExecutorSession,
  Spotter,
  SpotterAuthError,
  SpotterBadRequestError,
  SpotterNotFoundError,
  type SessionEvent,
} from "../src/index.js";
import { startShop, startSpotter, type Shop, type SpotterServer } from "./helpers.js";

describe("the client", () => {
  let server: SpotterServer;
  let shop: Shop;
  let session: ExecutorSession;

  before(async () => {
    [server, shop] = await Promise.all([startSpotter(), startShop()]);
    session = await server.spotter.openExecutor({ provider: "anthropic", start_url: shop.url });
  });
  after(async () => {
    await session?.close();
    await server?.stop();
    await shop?.close();
  });

  it("was generated from the spec the server answers", async () => {
    const res = await fetch(`${server.url}/openapi.yaml`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), readFileSync(new URL("../../../../docs/openapi.yaml", import.meta.url), "utf8"));
  });

  it("throws typed exceptions with the server's reason", async () => {
    const stranger = new Spotter({ baseUrl: server.url, token: "not-the-token" });
    await assert.rejects(stranger.approvals(), (e: unknown) => {
      assert.ok(e instanceof SpotterAuthError);
      assert.equal(e.status, 401);
      assert.ok(e.reason.length > 0, "the reason is the server's");
      return true;
    });
    await assert.rejects(server.spotter.history("s-none"), (e: unknown) => {
      assert.ok(e instanceof SpotterNotFoundError);
      assert.match(e.reason, /not found/);
      return true;
    });
    await assert.rejects(
      server.spotter.openExecutor({ provider: "anthropic", approvals: { supervise: "sometimes" as "all" } }),
      (e: unknown) => {
        assert.ok(e instanceof SpotterBadRequestError);
        assert.match(e.reason, /supervise/);
        return true;
      },
    );
  });

  it("resumes an event stream after the last event seen", async () => {
    const shot = { type: "tool_use" as const, id: "toolu_a", name: "computer", input: { action: "screenshot" } };
    const res = await session.call(shot);
    assert.equal(res.toolCallId, "toolu_a");
    const seen: SessionEvent[] = [];
    for await (const ev of session.events({ after: 0 })) {
      seen.push(ev);
      if (ev.event === "tool_result" && ev.data.toolCallId === "toolu_a") break;
    }
    const last = seen.at(-1)!.id;
    assert.deepEqual(
      seen.map((e) => e.id),
      seen.map((_, i) => seen[0].id + i),
      "events come in sequence",
    );
    await session.call({ ...shot, id: "toolu_b" });
    const rest: SessionEvent[] = [];
    for await (const ev of session.events({ after: last })) {
      rest.push(ev);
      if (ev.event === "tool_result") break;
    }
    assert.equal(rest[0].id, last + 1, "the stream resumes right after the last event seen");
    assert.ok(rest.every((e) => e.event !== "tool_result" || e.data.toolCallId === "toolu_b"));
  });
});
