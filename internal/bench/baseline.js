// The naive step that bench compares Spotter with: Playwright's
// page.mouse.click, then page.screenshot, nothing else. It reads one JSON
// command per line on stdin and answers one JSON line on stdout.
//   {"op":"open","id":"a","url":"...","w":1280,"h":800,"dpr":1}
//   {"op":"step","id":"a","x":200,"y":200,"keep":true}  -> {"ok":true,"ns":...,"png":"base64"}
//   {"op":"shot","id":"a"}                              -> {"ok":true,"ns":...}
//   {"op":"start","mode":"launch"|"context","url":"...","w":1280,"h":800}
//     -> {"ok":true,"ns":...,"png":"base64"}: launch a browser (or a new
//     context of the running one), new page, goto, screenshot; then closed
//   {"op":"quit"}
"use strict";
const path = require("path");
const readline = require("readline");
const pw = require(path.join(process.env.SPOTTER_DRIVER_DIR, "package"));

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

(async () => {
  const browser = await pw.chromium.launch({
    executablePath: process.env.SPOTTER_CHROMIUM,
    args: JSON.parse(process.env.SPOTTER_CHROMIUM_FLAGS || "[]"),
  });
  const pages = new Map();
  out({ ready: true, version: browser.version() });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (e) {
      out({ ok: false, error: "bad command: " + e });
      continue;
    }
    try {
      if (cmd.op === "open") {
        const ctx = await browser.newContext({ viewport: { width: cmd.w, height: cmd.h }, deviceScaleFactor: cmd.dpr });
        const page = await ctx.newPage();
        await page.goto(cmd.url);
        pages.set(cmd.id, page);
        out({ ok: true });
      } else if (cmd.op === "step") {
        const page = pages.get(cmd.id);
        const t0 = process.hrtime.bigint();
        await page.mouse.click(cmd.x, cmd.y);
        const png = await page.screenshot();
        const ns = Number(process.hrtime.bigint() - t0);
        out({ ok: true, ns, png: cmd.keep ? png.toString("base64") : undefined });
      } else if (cmd.op === "shot") {
        const page = pages.get(cmd.id);
        const t0 = process.hrtime.bigint();
        await page.screenshot();
        out({ ok: true, ns: Number(process.hrtime.bigint() - t0) });
      } else if (cmd.op === "start") {
        const t0 = process.hrtime.bigint();
        const own = cmd.mode === "launch" ? await pw.chromium.launch({
          executablePath: process.env.SPOTTER_CHROMIUM,
          args: JSON.parse(process.env.SPOTTER_CHROMIUM_FLAGS || "[]"),
        }) : null;
        const ctx = await (own || browser).newContext({ viewport: { width: cmd.w, height: cmd.h } });
        const page = await ctx.newPage();
        await page.goto(cmd.url);
        const png = await page.screenshot();
        const ns = Number(process.hrtime.bigint() - t0);
        await (own || ctx).close();
        out({ ok: true, ns, png: png.toString("base64") });
      } else if (cmd.op === "quit") {
        await browser.close();
        out({ ok: true });
        process.exit(0);
      } else {
        out({ ok: false, error: "unknown op " + cmd.op });
      }
    } catch (e) {
      out({ ok: false, error: String(e) });
    }
  }
  await browser.close();
})().catch((e) => {
  out({ ok: false, error: String(e) });
  process.exit(1);
});
