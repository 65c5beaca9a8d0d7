// Spotter's MCP endpoint (/mcp of `spotter serve`) as an MCP server of the
// OpenAI Agents SDK, whose MCPServerStreamableHttp is the MCP TypeScript SDK's
// streamable HTTP client. The agent gets Spotter's MCP tools (computer,
// navigate, open_session, close_session, list_sessions); each MCP session is a
// Spotter session of kind "mcp", whose flagged actions wait for a decision
// from the panel or POST /approvals/{id}, and a refused or denied call is a
// tool result with isError and Spotter's reason, which the agent reads.

import { MCPServerStreamableHttp } from "@openai/agents";
import type { Spotter } from "../client.js";

export interface SpotterMCPOptions {
  /** How long one tool call may take, approvals included (default 10 minutes). */
  timeoutSeconds?: number;
  name?: string;
}

/** An MCP server of the Agents SDK for Spotter's /mcp, with the client's token. Call connect() before a run. */
export function spotterMCPServer(spotter: Spotter, opts: SpotterMCPOptions = {}): MCPServerStreamableHttp {
  const seconds = opts.timeoutSeconds ?? 600;
  return new MCPServerStreamableHttp({
    url: `${spotter.baseUrl}/mcp`,
    name: opts.name ?? "spotter",
    requestInit: { headers: { Authorization: `Bearer ${spotter.token}` } },
    clientSessionTimeoutSeconds: seconds,
    timeout: seconds * 1000,
    // The SDK's default hides every failure behind one fixed sentence; the
    // model is better served by the words (Spotter's own refusals are tool
    // results, not failures, and reach it as they are).
    errorFunction: ({ error }) => `error: ${error instanceof Error ? error.message : String(error)}`,
  });
}
