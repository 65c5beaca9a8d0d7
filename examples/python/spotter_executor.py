#!/usr/bin/env python3
"""Drive Spotter's executor API with the standard library only.

A minimal client for `spotter serve`: open an executor session, post the
Anthropic tool_use blocks a model would send (one JSON object per line on
standard input), wait while a human decides a flagged action, and print each
answer in one line of JSON. In an agent loop, send each answer's "result" back
to Claude as the tool_result it is.

    SPOTTER_URL=http://127.0.0.1:8080 SPOTTER_TOKEN=... \\
        python3 spotter_executor.py https://example.com/ < calls.jsonl

Each input line is a tool_use block, e.g.
    {"type": "tool_use", "id": "toolu_1", "name": "computer",
     "input": {"action": "left_click", "coordinate": [640, 400]}}
"""

import base64
import json
import os
import struct
import sys
import urllib.error
import urllib.request


class SpotterError(Exception):
    """An answer that is not a success: the HTTP status and the server's reason."""

    def __init__(self, status, reason):
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


class Spotter:
    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=700) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            try:
                reason = json.load(e).get("error", e.reason)
            except ValueError:
                reason = e.reason
            raise SpotterError(e.code, reason) from None

    def open_session(self, start_url, model="claude-sonnet-4-5", display=None):
        spec = {"provider": "anthropic", "start_url": start_url, "model": {"name": model}}
        if display:
            spec["display"] = display
        return self.request("POST", "/executor/sessions", spec)[1]

    def call(self, session, tool_use):
        """Runs one tool_use; while a human decides (202), asks again for the result."""
        status, out = self.request("POST", f"/executor/sessions/{session}/call?wait=60s", tool_use)
        while status == 202:
            status, out = self.request("GET", f"/executor/sessions/{session}/calls/{out['toolCallId']}?wait=60s")
        return out

    def close(self, session):
        self.request("DELETE", f"/executor/sessions/{session}")


def png_size(b64):
    """The width and height of a base64 PNG."""
    head = base64.b64decode(b64[:64])
    return list(struct.unpack(">II", head[16:24]))


def summary(answer):
    """What the model gets, in short: the error (if any), the text, the screenshot's size."""
    out = {"toolCallId": answer["toolCallId"], "error": answer.get("error")}
    for part in answer["result"].get("content", []):
        if part.get("type") == "image":
            out["image"] = png_size(part["source"]["data"])
        elif part.get("type") == "text":
            out.setdefault("text", []).append(part["text"])
    return out


def main():
    spotter = Spotter(os.environ["SPOTTER_URL"], os.environ["SPOTTER_TOKEN"])
    width, height = (int(v) for v in os.environ.get("SPOTTER_DISPLAY", "1280x800").split("x"))
    session = spotter.open_session(sys.argv[1], display={"width": width, "height": height})
    # Declare the computer tool to Claude with this size: every screenshot is
    # that size, and so is the space of Claude's coordinates.
    print(json.dumps({"session": session["id"], "image": session["image"]}), flush=True)
    try:
        for line in sys.stdin:
            if line.strip():
                print(json.dumps(summary(spotter.call(session["id"], json.loads(line)))), flush=True)
    except SpotterError as e:
        print(json.dumps({"status": e.status, "reason": e.reason}), flush=True)
        return 1
    finally:
        spotter.close(session["id"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
