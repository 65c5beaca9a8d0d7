// npm test: finds the spotter binary (SPOTTER_BIN) or builds it from this
// checkout with Go, then runs the end-to-end tests (dist/test/*.test.js, built
// by tsc) with Node's test runner, one file at a time: each starts its own
// `spotter serve`.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, "..");
const repo = resolve(pkg, "../..");

let bin = process.env.SPOTTER_BIN;
if (!bin) {
  if (!existsSync(join(repo, "cmd/spotter"))) {
    console.error("SPOTTER_BIN is not set and this package is not inside a Spotter checkout to build it from");
    process.exit(2);
  }
  bin = join(pkg, "dist", "spotter");
  console.log(`building ${bin} (go build ./cmd/spotter)`);
  try {
    execFileSync("go", ["build", "-o", bin, "./cmd/spotter"], { cwd: repo, stdio: "inherit" });
  } catch (e) {
    console.error(`cannot build spotter: ${e.message}; install Go 1.26 or set SPOTTER_BIN`);
    process.exit(2);
  }
}

const tests = readdirSync(join(pkg, "dist/test"))
  .filter((f) => f.endsWith(".test.js") && (!process.argv[2] || f.includes(process.argv[2])))
  .map((f) => join("dist/test", f));
const r = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...tests], {
  cwd: pkg,
  stdio: "inherit",
  env: { ...process.env, SPOTTER_BIN: bin },
});
process.exit(r.status ?? 1);
