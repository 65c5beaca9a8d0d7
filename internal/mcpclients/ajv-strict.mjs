// Reads a tools/list result (JSON) on stdin and compiles every tool's input
// schema with ajv in strict mode; prints each tool's verdict, and exits 1
// when ajv refuses any schema.
import Ajv from "ajv";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { tools } = JSON.parse(input);
let failed = 0;
for (const tool of tools) {
  const ajv = new Ajv({ strict: true, strictTypes: true, strictTuples: true, strictRequired: true, allErrors: true });
  try {
    ajv.compile(tool.inputSchema);
    console.log(`ok ${tool.name}`);
  } catch (e) {
    failed++;
    console.log(`refused ${tool.name}: ${e.message}`);
  }
}
process.exit(failed ? 1 : 0);
