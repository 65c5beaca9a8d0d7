// The client of `spotter serve`: the generated types of docs/openapi.yaml
// (schema.ts, by openapi-typescript), a typed fetch client over them
// (openapi-fetch), and helpers for sessions, calls, event streams and
// approvals whose failures are typed exceptions carrying the server's reason.

import createClient, { type Client } from "openapi-fetch";
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export type Schemas = components["schemas"];
export type SessionSpec = Schemas["SessionSpec"];
export type ExecutorSpec = SessionSpec & { provider: NonNullable<SessionSpec["provider"]> };
export type ExecutorResult = Schemas["ExecutorResult"];
export type ExecutorPending = Schemas["ExecutorPending"];
export type NativeCall = Schemas["NativeCall"];
export type Size = Schemas["Size"];
export type Frame = Schemas["Frame"];
export type Screenshot = Schemas["Screenshot"];
export type Approval = Schemas["Approval"];
export type ApprovalStatus = Schemas["ApprovalStatus"];
export type Decision = Schemas["Decision"];
export type SessionEvent = Schemas["SessionEvent"];
export type History = Schemas["History"];
export type Action = Schemas["Action"];

/** An answer of the server that is not a success: its status and its reason (`{"error": reason}`). */
export class SpotterError extends Error {
  readonly status: number;
  readonly reason: string;
  /** Seconds to wait before retrying (429, 503), when the server said. */
  readonly retryAfter?: number;
  constructor(status: number, reason: string, retryAfter?: number) {
    super(`spotter: ${status}: ${reason}`);
    this.name = new.target.name;
    this.status = status;
    this.reason = reason;
    this.retryAfter = retryAfter;
  }
}
/** 400: the request must change; the reason says how. */
export class SpotterBadRequestError extends SpotterError {}
/** 401 or 403: no valid credentials, or a scoped token outside its session. */
export class SpotterAuthError extends SpotterError {}
/** 404: no such session, call or approval. */
export class SpotterNotFoundError extends SpotterError {}
/** 409: the session's state does not allow it (a call id reused for another call). */
export class SpotterConflictError extends SpotterError {}
/** 410: the result of that call is no longer kept. */
export class SpotterGoneError extends SpotterError {}
/** 429 or 503: over a bound or a rate limit, at capacity or draining; retry after `retryAfter`. */
export class SpotterBusyError extends SpotterError {}

/**
 * A call that Spotter answered but did not (wholly) perform: a denial, a
 * policy refusal, an action that failed. `reason` is Spotter's words for
 * the model; `result` the whole answer (its fresh screenshot included).
 */
export class SpotterActionError extends Error {
  readonly reason: string;
  readonly result: ExecutorResult;
  constructor(result: ExecutorResult) {
    super(result.error ?? "the call failed");
    this.name = "SpotterActionError";
    this.reason = result.error ?? "";
    this.result = result;
  }
}

/** errorOf turns a failed answer into its typed exception. */
export function errorOf(response: Response, body: unknown): SpotterError {
  const reason =
    body && typeof body === "object" && typeof (body as { error?: unknown }).error === "string"
      ? (body as { error: string }).error
      : response.statusText || "error";
  const ra = Number(response.headers.get("Retry-After"));
  const retryAfter = Number.isFinite(ra) && ra > 0 ? ra : undefined;
  const s = response.status;
  const cls =
    s === 400 ? SpotterBadRequestError
    : s === 401 || s === 403 ? SpotterAuthError
    : s === 404 ? SpotterNotFoundError
    : s === 409 ? SpotterConflictError
    : s === 410 ? SpotterGoneError
    : s === 429 || s === 503 ? SpotterBusyError
    : SpotterError;
  return new cls(s, reason, retryAfter);
}

export interface SpotterOptions {
  /** The server, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** The server's token, or a session-scoped one. */
  token: string;
  fetch?: typeof globalThis.fetch;
}

export interface EventsOptions {
  /** Send the events after this sequence number (default 0: all). */
  after?: number;
  signal?: AbortSignal;
  /** Reconnections after the stream breaks, each resuming after the last event seen (default 5). */
  retries?: number;
}

/** A client of one `spotter serve`. `api` is the generated client, for every route. */
export class Spotter {
  readonly api: Client<paths>;
  readonly baseUrl: string;
  readonly token: string;
  private readonly fetchFn: typeof globalThis.fetch;

  constructor(opts: SpotterOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.token = opts.token;
    this.fetchFn = opts.fetch ?? globalThis.fetch;
    const f = this.fetchFn;
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      headers: { Authorization: `Bearer ${opts.token}` },
      fetch: (req) => f(req),
    });
  }

  /** Open an executor session: a display for your own agent loop. */
  async openExecutor(spec: ExecutorSpec): Promise<ExecutorSession> {
    const { data, error, response } = await this.api.POST("/executor/sessions", { body: spec });
    if (error !== undefined) throw errorOf(response, error);
    return new ExecutorSession(this, data);
  }

  /** Approvals, of one session and one status if given. */
  async approvals(filter: { session?: string; status?: ApprovalStatus } = {}): Promise<Approval[]> {
    const { data, error, response } = await this.api.GET("/approvals", { params: { query: filter } });
    if (error !== undefined) throw errorOf(response, error);
    return data.approvals;
  }

  /** Decide an approval: approve, deny (with a reason the model is told) or edit. */
  async decide(approvalId: string, decision: Decision): Promise<Approval> {
    const { data, error, response } = await this.api.POST("/approvals/{id}", {
      params: { path: { id: approvalId } },
      body: decision,
    });
    if (error !== undefined) throw errorOf(response, error);
    return data;
  }

  /**
   * The next approval of a session that waits for a human: the first
   * permission_request of its event stream that is still pending.
   */
  async nextApproval(session: string, opts: { signal?: AbortSignal } = {}): Promise<Approval> {
    const ctl = new AbortController();
    const stop = () => ctl.abort(opts.signal?.reason);
    opts.signal?.addEventListener("abort", stop, { once: true });
    try {
      for await (const ev of this.events(session, { signal: ctl.signal })) {
        if (ev.event !== "permission_request") continue;
        const pending = await this.approvals({ session, status: "pending" });
        const a = pending.find((p) => p.id === ev.data.approvalId);
        if (a) return a;
      }
      throw new Error(`spotter: the event stream of ${session} ended before an approval`);
    } finally {
      opts.signal?.removeEventListener("abort", stop);
      ctl.abort();
    }
  }

  /** A session's record and history. */
  async history(session: string): Promise<History> {
    const { data, error, response } = await this.api.GET("/session/{id}", { params: { path: { id: session } } });
    if (error !== undefined) throw errorOf(response, error);
    return data;
  }

  /**
   * Follow a session's events. A stream that breaks (a restart, a replica
   * handing the session over) is resumed after the last event seen, so
   * nothing is missed or repeated; it ends when `signal` aborts.
   */
  async *events(session: string, opts: EventsOptions = {}): AsyncGenerator<SessionEvent> {
    let after = opts.after ?? 0;
    let retries = opts.retries ?? 5;
    for (;;) {
      let res: Response;
      try {
        res = await this.fetchFn(`${this.baseUrl}/session/${encodeURIComponent(session)}/events?after=${after}`, {
          headers: { Authorization: `Bearer ${this.token}`, Accept: "text/event-stream" },
          signal: opts.signal,
        });
      } catch (e) {
        if (opts.signal?.aborted || retries-- <= 0) throw e;
        continue;
      }
      if (!res.ok) throw errorOf(res, await res.json().catch(() => undefined));
      try {
        for await (const ev of readEvents(res)) {
          after = ev.id;
          retries = opts.retries ?? 5;
          yield ev;
        }
      } catch (e) {
        if (opts.signal?.aborted) return;
        if (retries-- <= 0) throw e;
        continue;
      }
      if (opts.signal?.aborted || retries-- <= 0) return;
    }
  }

  /**
   * Start an agent session (the server runs the model) and read its first
   * turn's events, until turn_stop.
   */
  async startSession(spec: SessionSpec, opts: { providerKey?: string; signal?: AbortSignal } = {}): Promise<{
    id: string;
    events: SessionEvent[];
  }> {
    const { error, response } = await this.api.PUT("/session", {
      body: spec,
      params: { header: opts.providerKey ? { "X-Spotter-Provider-Key": opts.providerKey } : {} },
      parseAs: "stream",
      signal: opts.signal,
    });
    if (error !== undefined) throw errorOf(response, error);
    const events: SessionEvent[] = [];
    for await (const ev of readEvents(response)) events.push(ev);
    return { id: response.headers.get("X-Session-Id") ?? "", events };
  }

  /** Stop a session's run. */
  async stop(session: string): Promise<void> {
    const { error, response } = await this.api.POST("/session/{id}/stop", { params: { path: { id: session } } });
    if (error !== undefined) throw errorOf(response, error);
  }
}

/** readEvents parses a response's Server-Sent Events into the spec's SessionEvent. */
export async function* readEvents(res: Response): AsyncGenerator<SessionEvent> {
  if (!res.body) return;
  const stream = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  for await (const m of stream as unknown as AsyncIterable<{ id?: string; event?: string; data: string }>) {
    yield { id: Number(m.id), event: m.event, data: JSON.parse(m.data) } as SessionEvent;
  }
}

/** How long a call waits for its result in one request before Spotter answers 202 and the helper asks again. */
export interface CallOptions {
  /** A Go duration, default "60s". */
  wait?: string;
  signal?: AbortSignal;
}

/** An executor session: post provider-native calls, get provider-native results with fresh screenshots. */
export class ExecutorSession {
  readonly spotter: Spotter;
  readonly id: string;
  /** The size of every screenshot, and the space of the coordinates of the calls you post. */
  readonly image: Size;
  readonly screenshot: Screenshot;
  readonly frame: Frame;

  constructor(spotter: Spotter, created: Schemas["ExecutorSession"]) {
    this.spotter = spotter;
    this.id = created.id;
    this.image = created.image;
    this.screenshot = created.screenshot;
    this.frame = created.frame;
  }

  /**
   * Run one call and return its result once it is done: while it waits for
   * a human, this waits too (Spotter answers 202 and the helper asks again).
   * A call Spotter refused or that was denied is still a result, with
   * `error`; HTTP failures are thrown as SpotterError.
   */
  async call(call: NativeCall, opts: CallOptions = {}): Promise<ExecutorResult> {
    const api = this.spotter.api;
    const wait = opts.wait ?? "60s";
    let r = await api.POST("/executor/sessions/{id}/call", {
      params: { path: { id: this.id }, query: { wait } },
      body: call,
      signal: opts.signal,
    });
    for (;;) {
      if (r.error !== undefined) throw errorOf(r.response, r.error);
      const d = r.data;
      if (d.status === "done") return d as ExecutorResult;
      r = await api.GET("/executor/sessions/{id}/calls/{callId}", {
        params: { path: { id: this.id, callId: d.toolCallId }, query: { wait } },
        signal: opts.signal,
      });
    }
  }

  /** Follow this session's events (tool calls, permission requests, results). */
  events(opts: EventsOptions = {}): AsyncGenerator<SessionEvent> {
    return this.spotter.events(this.id, opts);
  }

  /** The next approval this session waits for. */
  nextApproval(opts: { signal?: AbortSignal } = {}): Promise<Approval> {
    return this.spotter.nextApproval(this.id, opts);
  }

  /** Stop the session and close its display; its history stays readable. */
  async close(): Promise<void> {
    const { error, response } = await this.spotter.api.DELETE("/executor/sessions/{id}", {
      params: { path: { id: this.id } },
    });
    if (error !== undefined) throw errorOf(response, error);
  }
}
