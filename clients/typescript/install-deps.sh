#!/usr/bin/env bash
# Installs clients/typescript's npm packages from package-lock.json (npm ci,
# which also builds the package: its prepare script generates src/schema.ts
# from docs/openapi.yaml and compiles). Idempotent: nothing runs while the
# lockfile and package.json are those of the last install. The frameworks the
# tests run need Node.js 22; npm installs it as the package node@22 and the
# package's scripts run it (node_modules/.bin/node).
set -euo pipefail
cd "$(dirname "$0")"
stamp=node_modules/.spotter-installed
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x node_modules/.bin/node ]; then
	exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
echo "$want" >"$stamp"
