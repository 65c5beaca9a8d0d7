// SpotterComputer: the OpenAI Agents SDK's Computer, performed by Spotter.
//
// Each action the SDK asks of its Computer is posted to a Spotter executor
// session (provider "openai") as a GA computer_call of one action, so it goes
// through Spotter's policy, approval rules, coordinate mapping and trace, and
// waits while a human decides. The screenshot the SDK sends the model is the
// image Spotter sized (`dimensions`).
//
// The SDK's computer_call_output carries a screenshot and nothing else, and an
// error thrown by a Computer reaches the model as an empty screenshot. So a
// refused, denied or failed action is not thrown: its batch's later actions are
// skipped (as Spotter skips them within one call), the screenshot is still the
// fresh one, and Spotter's words for the model are added after that output as
// the user message Spotter's own OpenAI adapter sends, by the run's
// `callModelInputFilter` (pass `computer.callModelInputFilter` to the Runner).

import { computerTool, type CallModelInputFilter, type Computer, type ComputerTool } from "@openai/agents";
import { ExecutorSession, Spotter, type ExecutorResult, type ExecutorSpec } from "../client.js";

type GAAction = Record<string, unknown> & { type: string };
type Environment = NonNullable<Computer["environment"]>;
type Button = Parameters<Computer["click"]>[2];

export class SpotterComputer implements Computer {
  readonly environment: Environment = "browser";
  /** Spotter's image size for this session: the screenshots' size and the model's coordinate space. */
  readonly dimensions: [number, number];
  readonly session: ExecutorSession;
  /** Every call's result, in order (for inspection and tests). */
  readonly results: ExecutorResult[] = [];

  private shot: string;
  private calls = 0;
  /** What went wrong in the batch being run: Spotter's words for the model. */
  private batchError?: string;
  /** Each finished batch's words for the model, by the SDK's call id. */
  private readonly notes = new Map<string, string>();

  constructor(session: ExecutorSession) {
    this.session = session;
    this.dimensions = [session.image.w, session.image.h];
    this.shot = session.screenshot.data;
  }

  /** Open an executor session for the OpenAI computer tool and wrap it. */
  static async open(spotter: Spotter, spec: Omit<ExecutorSpec, "provider"> = {}): Promise<SpotterComputer> {
    return new SpotterComputer(await spotter.openExecutor({ ...spec, provider: "openai" }));
  }

  /** The SDK's computer tool over this computer. */
  tool(name?: string): ComputerTool {
    return computerTool({
      name,
      computer: this,
      customDataExtractor: ({ toolCall }) => {
        // Called once the SDK ran a computer_call's batch: its words, if any,
        // belong after that call's output.
        if (this.batchError !== undefined) this.notes.set(toolCall.callId, this.batchError);
        this.batchError = undefined;
        return undefined;
      },
    });
  }

  /** Adds Spotter's words about a failed batch after its computer_call_result (RunConfig.callModelInputFilter). */
  readonly callModelInputFilter: CallModelInputFilter = ({ modelData }) => {
    if (this.notes.size === 0) return modelData;
    const input = modelData.input.flatMap((item) => {
      const id = item.type === "computer_call_result" ? item.callId : undefined;
      const note = id === undefined ? undefined : this.notes.get(id);
      return note === undefined ? [item] : [item, { role: "user" as const, content: note }];
    });
    return { ...modelData, input };
  };

  async screenshot(): Promise<string> {
    return this.shot;
  }

  click(x: number, y: number, button: Button): Promise<void> {
    return this.act({ type: "click", x, y, button });
  }
  doubleClick(x: number, y: number): Promise<void> {
    return this.act({ type: "double_click", x, y });
  }
  scroll(x: number, y: number, scrollX: number, scrollY: number): Promise<void> {
    return this.act({ type: "scroll", x, y, scroll_x: scrollX, scroll_y: scrollY });
  }
  type(text: string): Promise<void> {
    return this.act({ type: "type", text });
  }
  wait(): Promise<void> {
    return this.act({ type: "wait" });
  }
  move(x: number, y: number): Promise<void> {
    return this.act({ type: "move", x, y });
  }
  keypress(keys: string[]): Promise<void> {
    return this.act({ type: "keypress", keys });
  }
  drag(path: [number, number][]): Promise<void> {
    return this.act({ type: "drag", path: path.map(([x, y]) => ({ x, y })) });
  }

  /** Stop the session and close its display. */
  close(): Promise<void> {
    return this.session.close();
  }

  private async act(action: GAAction): Promise<void> {
    if (this.batchError !== undefined) {
      return; // an earlier action of this batch failed: Spotter would not run the rest either
    }
    const res = await this.session.call({
      type: "computer_call",
      call_id: `agents_${++this.calls}`,
      actions: [action],
      pending_safety_checks: [],
    });
    this.results.push(res);
    const url = (res.result as { output?: { image_url?: string } }).output?.image_url;
    if (url) this.shot = url.slice(url.indexOf(",") + 1);
    if (res.error !== undefined) this.batchError = messageText(res) ?? res.error;
  }
}

/** The text of the user message Spotter sends after a computer_call_output. */
function messageText(res: ExecutorResult): string | undefined {
  return res.message?.content || undefined;
}
