// report.js sends what happens on a page of the conformance suite to the
// test server, one POST per event, numbered so that the server can order
// them. A display's Capture waits for the network to be quiet, so every
// event of an action has arrived when the capture after it returns.
"use strict";
const session = new URLSearchParams(location.search).get("s") || "none";
let seq = 0;
function report(r) {
  r.seq = seq++;
  fetch("/events?s=" + encodeURIComponent(session), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(r),
  });
}
window.addEventListener("load", () => {
  report({ type: "load", dpr: devicePixelRatio, w: innerWidth, h: innerHeight });
});
