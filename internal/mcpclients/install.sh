#!/usr/bin/env bash
# Installs the MCP clients Spotter's tests drive its MCP servers with, from
# the npm registry: Node.js 22 (the npm package node@22; the conformance
# suite and the Inspector need it), the MCP Inspector (its --cli), the
# official conformance suite, the official TypeScript SDK and ajv (the
# JSON Schema validator, in strict mode).
#
# Usage: install.sh [DIR]
# DIR defaults to $SPOTTER_MCP_CLIENTS, else
# ${XDG_CACHE_HOME:-~/.cache}/spotter/mcp-clients-$stamp. Idempotent: a
# DIR with the right versions is left alone. Prints DIR.
set -euo pipefail

pkgs=(node@22.23.3 @modelcontextprotocol/inspector@2.12.0 @modelcontextprotocol/conformance@0.1.16
	@modelcontextprotocol/sdk@1.32.2 ajv@8.20.0)
stamp=$(printf '%s\n' "${pkgs[@]}" | sha256sum | cut -c1-12)
dir=${1:-${SPOTTER_MCP_CLIENTS:-${XDG_CACHE_HOME:-$HOME/.cache}/spotter/mcp-clients-$stamp}}

if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$stamp" ] && [ -x "$dir/node_modules/.bin/node" ]; then
	echo "$dir"
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "installing: nodejs npm" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private": true}' >package.json
npm install --silent --no-audit --no-fund --no-save "${pkgs[@]}" >&2
if [ "$("$dir/node_modules/.bin/node" -p 'process.versions.node.split(".")[0]')" != 22 ]; then
	echo "$dir/node_modules/.bin/node is not Node.js 22" >&2
	exit 1
fi
echo "$stamp" >"$dir/.installed"
echo "$dir"
