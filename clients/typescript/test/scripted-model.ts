// A model of the test's own for the OpenAI Agents SDK (its Model and
// ModelProvider interfaces): each request is answered with the next scripted
// output, and the requests are kept to see what reached the model.

import { Usage, type Model, type ModelProvider, type ModelRequest, type ModelResponse } from "@openai/agents";

export type Output = ModelResponse["output"];

export class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  private readonly script: Output[];
  constructor(script: Output[]) {
    this.script = [...script];
  }
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(structuredClone(request));
    const output = this.script.shift();
    if (!output) throw new Error("the script has no more turns");
    return { usage: new Usage(), output, responseId: `resp_${this.requests.length}` };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the scripted model does not stream");
  }
  /** A provider whose every model is this one. */
  provider(): ModelProvider {
    return { getModel: () => this };
  }
}

/** The model's last turn: it says it is done. */
export const done: Output[number] = {
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text: "Done." }],
};
