#!/usr/bin/env bash
# Installs the third-party page libraries that screen/cdp's TestRealLibraries
# loads into its pages: jQuery 1.12.4 (its animations step on one shared
# setInterval of 13 ms) and Zone.js 0.15.1 (Angular's, which wraps every timer
# function), from the npm registry, as DIR/jquery-1.12.4.min.js and
# DIR/zone-0.15.1.umd.min.js.
#
# Usage: install-weblibs.sh [DIR]
# DIR defaults to $SPOTTER_WEBLIBS, else ${XDG_CACHE_HOME:-~/.cache}/spotter/weblibs,
# where the test looks. Idempotent: files in place are left alone. Prints DIR.
set -euo pipefail

dir=${1:-${SPOTTER_WEBLIBS:-${XDG_CACHE_HOME:-$HOME/.cache}/spotter/weblibs}}
jquery=jquery-1.12.4.min.js
zone=zone-0.15.1.umd.min.js

if [ -s "$dir/$jquery" ] && [ -s "$dir/$zone" ]; then
	echo "$dir"
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	# .ci/deps runs screen/playwright/install-driver.sh first, which installs it.
	echo "install-weblibs.sh needs npm: run .ci/deps (make deps), which installs Node.js and npm" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent jquery@1.12.4 zone.js@0.15.1 >/dev/null)
mkdir -p "$tmp/jquery" "$tmp/zone"
tar -xzf "$tmp/jquery-1.12.4.tgz" -C "$tmp/jquery"
tar -xzf "$tmp/zone.js-0.15.1.tgz" -C "$tmp/zone"
mkdir -p "$dir"
cp "$tmp/jquery/package/dist/jquery.min.js" "$dir/$jquery"
cp "$tmp/zone/package/bundles/zone.umd.min.js" "$dir/$zone"
echo "$dir"
