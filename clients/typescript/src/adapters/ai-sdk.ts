// The Vercel AI SDK's Anthropic computer tool (computer_20250124), executed by
// Spotter: each call the model makes is posted to a Spotter executor session
// (provider "anthropic") as the tool_use block it is, so it goes through
// Spotter's policy, approval rules, coordinate mapping and trace, and waits
// while a human decides. The tool is declared with Spotter's image size, the
// size of every screenshot it returns.
//
// A call Spotter refused, that a human denied or that failed is thrown as a
// SpotterActionError: the SDK sends the model its message as the tool's error.

import { anthropic } from "@ai-sdk/anthropic";
import { ExecutorSession, Spotter, SpotterActionError, type ExecutorSpec } from "../client.js";

/** What the tool returns: Spotter's notes in words, and the fresh screenshot. */
export interface SpotterToolOutput {
  text: string[];
  image?: { data: string; mediaType: string };
}

/** Open an executor session for Anthropic's computer tool. */
export function openAnthropicSession(
  spotter: Spotter,
  spec: Omit<ExecutorSpec, "provider"> = {},
): Promise<ExecutorSession> {
  return spotter.openExecutor({ ...spec, provider: "anthropic" });
}

/** Anthropic's computer tool (computer_20250124) for the AI SDK, performed by the Spotter session. */
export function spotterComputerTool(session: ExecutorSession) {
  return anthropic.tools.computer_20250124({
    displayWidthPx: session.image.w,
    displayHeightPx: session.image.h,
    execute: async (input, { toolCallId, abortSignal }): Promise<SpotterToolOutput> => {
      const res = await session.call(
        { type: "tool_use", id: toolCallId, name: "computer", input },
        { signal: abortSignal },
      );
      if (res.error !== undefined) throw new SpotterActionError(res);
      return outputOf(res.result);
    },
    toModelOutput: ({ output }) => ({
      type: "content" as const,
      value: [
        ...output.text.map((text) => ({ type: "text" as const, text })),
        ...(output.image
          ? [{ type: "file" as const, mediaType: output.image.mediaType, data: { type: "data" as const, data: output.image.data } }]
          : []),
      ],
    }),
  });
}

/** outputOf reads Anthropic's tool_result block, as Spotter answers it. */
function outputOf(result: unknown): SpotterToolOutput {
  type Part = { type: string; text?: string; source?: { media_type?: string; data?: string } };
  const content = (result as { content?: Part[] | string }).content;
  const out: SpotterToolOutput = { text: [] };
  if (typeof content === "string") {
    out.text.push(content);
    return out;
  }
  for (const p of content ?? []) {
    if (p.type === "text" && p.text) out.text.push(p.text);
    if (p.type === "image" && p.source?.data) {
      out.image = { data: p.source.data, mediaType: p.source.media_type ?? "image/png" };
    }
  }
  return out;
}
