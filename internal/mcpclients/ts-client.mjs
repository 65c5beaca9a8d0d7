// A client of the official TypeScript SDK over stdio, declaring no
// capabilities (no elicitation): it starts the server command given as
// arguments, calls each tool call given as JSON in $CALLS ([{name,
// arguments}]) in order, and prints each result as a JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "spotter-test-ts", version: "1.0.0" }, { capabilities: {} });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
for (const call of JSON.parse(process.env.CALLS)) {
  const res = await client.callTool(call);
  const text = res.content.filter((c) => c.type === "text").map((c) => c.text);
  const images = res.content.filter((c) => c.type === "image").length;
  console.log(JSON.stringify({ name: call.name, isError: !!res.isError, text, images }));
}
await client.close();
