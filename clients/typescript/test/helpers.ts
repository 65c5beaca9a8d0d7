// What the end-to-end tests share: a real `spotter serve` (the binary that
// test/run.mjs builds or finds, on a real Chromium), a local shop page that
// records what reached it, and PNG sizes.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { AddressInfo } from "node:net";
import { Spotter } from "../src/index.js";

export interface SpotterServer {
  url: string;
  token: string;
  spotter: Spotter;
  /** What the server wrote to stderr, for failures. */
  log: string[];
  stop(): Promise<void>;
}

/** startSpotter runs `spotter serve` on a loopback port of its own, with a token of the test's. */
export async function startSpotter(extra: string[] = []): Promise<SpotterServer> {
  const bin = process.env.SPOTTER_BIN;
  if (!bin) throw new Error("SPOTTER_BIN is not set: run the tests with npm test (test/run.mjs builds the binary)");
  const data = mkdtempSync(join(tmpdir(), "spotter-ts-"));
  const token = `ts-${process.pid}-${Date.now()}`;
  const args = ["serve", "--addr", "127.0.0.1:0", "--data", data, "--token", token, "--drain-timeout", "2s", ...extra];
  const child: ChildProcess = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  const log: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (l) => log.push(l));
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (l) => {
      const m = /^spotter: listening on (http:\/\/\S+)$/.exec(l);
      if (m) resolve(m[1]);
    });
    child.once("exit", (code) => reject(new Error(`spotter serve exited (${code}) before listening:\n${log.join("\n")}`)));
    child.once("error", reject);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    url,
    token,
    log,
    spotter: new Spotter({ baseUrl: url, token }),
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(data, { recursive: true, force: true });
    },
  };
}

/** One thing the shop page reported: what was saved or bought. */
export interface Record {
  action: string;
  name?: string;
}

export interface Shop {
  url: string;
  host: string;
  records: Record[];
  /** Resolves once the page has reported n records. */
  until(n: number): Promise<void>;
  close(): Promise<void>;
}

/** The shop page's controls, in CSS pixels of the page (its centres). */
export const controls = {
  name: { x: 300, y: 120 },
  save: { x: 200, y: 225 },
  buy: { x: 200, y: 325 },
};

const page = `<!doctype html>
<html><head><title>Shop</title><style>
body{margin:0;font:20px sans-serif}
#name{position:absolute;left:100px;top:100px;width:400px;height:40px;box-sizing:border-box;font-size:20px}
button{position:absolute;left:100px;width:200px;height:50px;font-size:20px}
#save{top:200px}#buy{top:300px}
</style></head><body>
<input id="name" aria-label="Passenger name" autocomplete="off">
<button id="save" onclick="send({action:'save',name:document.getElementById('name').value})">Save</button>
<button id="buy" onclick="send({action:'buy'})">Buy now</button>
<script>
function send(r){fetch('/record',{method:'POST',headers:{'Content-Type':'application/json'},body:JSON.stringify(r)});}
</script></body></html>`;

/** startShop serves the shop page on loopback and records what its buttons send. */
export async function startShop(): Promise<Shop> {
  const records: Record[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const server: Server = createServer((req, res) => {
    if (req.method === "POST" && req.url === "/record") {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        records.push(JSON.parse(body) as Record);
        for (const w of waiters.filter((w) => records.length >= w.n)) w.resolve();
        res.writeHead(204).end();
      });
      return;
    }
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const host = `127.0.0.1:${port}`;
  return {
    url: `http://${host}/`,
    host,
    records,
    until: (n) =>
      records.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** pngSize reads the width and height of a base64 PNG. */
export function pngSize(b64: string): { w: number; h: number } {
  const b = Buffer.from(b64, "base64");
  if (b.toString("latin1", 1, 4) !== "PNG") throw new Error("not a PNG");
  return { w: b.readUInt32BE(16), h: b.readUInt32BE(20) };
}

/** The display every test opens: larger than the providers' image sizes, so Spotter resizes. */
export const display = { width: 1920, height: 1080 };

/** at maps a point of the page (CSS px) into the session's image, the model's coordinate space. */
export function at(p: { x: number; y: number }, image: { w: number; h: number }): [number, number] {
  return [Math.round((p.x * image.w) / display.width), Math.round((p.y * image.h) / display.height)];
}
