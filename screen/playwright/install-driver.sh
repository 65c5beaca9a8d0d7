#!/usr/bin/env bash
# Installs the Playwright driver that screen/playwright runs: playwright-core
# from the npm registry, unpacked so that DIR/package/cli.js exists, and DIR/node,
# a link to the system's Node.js. It never runs Playwright's own downloader and
# installs no browser (the display uses Debian's /usr/bin/chromium).
#
# Usage: install-driver.sh [DIR [VERSION]]
# DIR defaults to $SPOTTER_PLAYWRIGHT_DRIVER, else
# ${XDG_CACHE_HOME:-~/.cache}/spotter/playwright-1.52.0, the default of
# playwright.Config.DriverDir. VERSION defaults to 1.52.0, the driver's; the
# tests also use another one, for a server of another version (a DIR must be
# given with it). Idempotent: a driver of the right version is left alone.
# Prints DIR.
set -euo pipefail

version=${2:-1.52.0} # the default must match the playwright-go module in go.mod (v0.5200.x)
dir=${1:-${SPOTTER_PLAYWRIGHT_DRIVER:-${XDG_CACHE_HOME:-$HOME/.cache}/spotter/playwright-$version}}

have() { command -v "$1" >/dev/null 2>&1; }
installed() {
	[ -e "$dir/node" ] && [ -f "$dir/package/cli.js" ] &&
		[ "$("$dir/node" "$dir/package/cli.js" --version 2>/dev/null)" = "Version $version" ]
}

if installed; then
	echo "$dir"
	exit 0
fi

if ! have node || ! have npm; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "installing: nodejs npm" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
	echo "playwright-core $version needs Node.js 18 or later; $(command -v node) is $(node --version)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "playwright-core@$version" >/dev/null)
tar -xzf "$tmp/playwright-core-$version.tgz" -C "$tmp"
if [ ! -f "$tmp/package/cli.js" ]; then
	echo "playwright-core-$version.tgz has no package/cli.js" >&2
	exit 1
fi

mkdir -p "$dir"
rm -rf "$dir/package"
mv "$tmp/package" "$dir/package"
ln -sfn "$(command -v node)" "$dir/node"
if ! installed; then
	echo "the driver in $dir does not report version $version" >&2
	exit 1
fi
echo "$dir"
