// Starts a Playwright browser server, as a Playwright grid node does, for
// the connected-display tests: chromium.launchServer with the Chromium at
// argv[3], from the playwright-core package at argv[2] (the driver
// directory's package/). Prints the server's wsEndpoint on the first line of
// stdout and runs until stdin closes (or SIGTERM), then closes the server
// and its browser and exits.
//
// Usage: node launch-server.js DRIVER/package /usr/bin/chromium [flags...]
"use strict";

const [pkg, executablePath, ...args] = process.argv.slice(2);
if (!pkg || !executablePath) {
	console.error("usage: node launch-server.js PLAYWRIGHT_CORE_DIR CHROMIUM [FLAGS...]");
	process.exit(2);
}
const { chromium } = require(pkg);

let server = null;
let closing = null;
function stop(code) {
	if (!closing) {
		closing = (server ? server.close() : Promise.resolve())
			.catch(err => console.error("close:", err))
			.finally(() => process.exit(code));
	}
	return closing;
}
process.stdin.on("end", () => stop(0));
process.stdin.on("error", () => stop(0));
process.stdin.resume();
process.on("SIGTERM", () => stop(0));

chromium.launchServer({
	executablePath,
	headless: true,
	chromiumSandbox: false,
	args,
	host: "127.0.0.1",
	port: 0,
	// The Go side closes stdin or sends SIGTERM; the server must not die of
	// its own accord on other signals meant for the test process.
	handleSIGINT: false,
}).then(s => {
	server = s;
	if (closing) return s.close();
	process.stdout.write(s.wsEndpoint() + "\n");
}, err => {
	console.error("launchServer:", err && err.message || err);
	process.exit(1);
});
