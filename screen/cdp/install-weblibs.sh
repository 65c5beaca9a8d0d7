#!/usr/bin/env bash
# Installs the third-party page libraries that screen/cdp's TestRealLibraries
# loads into its pages, from the npm registry: jQuery 1.12.4 (its animations
# step on one shared setInterval of 13 ms), Zone.js 0.15.1 (Angular's, which
# wraps every timer function), GSAP 3.15.0 (tweens on its own
# requestAnimationFrame ticker), Anime.js 4.5.0 (its engine on
# requestAnimationFrame) and Bootstrap 5.3.8 (its collapse is a CSS transition
# that its script ends on transitionend), as DIR/jquery-1.12.4.min.js,
# DIR/zone-0.15.1.umd.min.js, DIR/gsap-3.15.0.min.js, DIR/anime-4.5.0.umd.min.js,
# DIR/bootstrap-5.3.8.bundle.min.js and DIR/bootstrap-5.3.8.min.css.
#
# Usage: install-weblibs.sh [DIR]
# DIR defaults to $SPOTTER_WEBLIBS, else ${XDG_CACHE_HOME:-~/.cache}/spotter/weblibs,
# where the test looks. Idempotent: files in place are left alone. Prints DIR.
set -euo pipefail

dir=${1:-${SPOTTER_WEBLIBS:-${XDG_CACHE_HOME:-$HOME/.cache}/spotter/weblibs}}
jquery=jquery-1.12.4.min.js
zone=zone-0.15.1.umd.min.js
gsap=gsap-3.15.0.min.js
anime=anime-4.5.0.umd.min.js
bsjs=bootstrap-5.3.8.bundle.min.js
bscss=bootstrap-5.3.8.min.css

if [ -s "$dir/$jquery" ] && [ -s "$dir/$zone" ] && [ -s "$dir/$gsap" ] && [ -s "$dir/$anime" ] && [ -s "$dir/$bsjs" ] && [ -s "$dir/$bscss" ]; then
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
(cd "$tmp" && npm pack --silent jquery@1.12.4 zone.js@0.15.1 gsap@3.15.0 animejs@4.5.0 bootstrap@5.3.8 >/dev/null)
mkdir -p "$tmp/jquery" "$tmp/zone" "$tmp/gsap" "$tmp/anime" "$tmp/bootstrap"
tar -xzf "$tmp/jquery-1.12.4.tgz" -C "$tmp/jquery"
tar -xzf "$tmp/zone.js-0.15.1.tgz" -C "$tmp/zone"
tar -xzf "$tmp/gsap-3.15.0.tgz" -C "$tmp/gsap"
tar -xzf "$tmp/animejs-4.5.0.tgz" -C "$tmp/anime"
tar -xzf "$tmp/bootstrap-5.3.8.tgz" -C "$tmp/bootstrap"
mkdir -p "$dir"
cp "$tmp/jquery/package/dist/jquery.min.js" "$dir/$jquery"
cp "$tmp/zone/package/bundles/zone.umd.min.js" "$dir/$zone"
cp "$tmp/gsap/package/dist/gsap.min.js" "$dir/$gsap"
cp "$tmp/anime/package/dist/bundles/anime.umd.min.js" "$dir/$anime"
cp "$tmp/bootstrap/package/dist/js/bootstrap.bundle.min.js" "$dir/$bsjs"
cp "$tmp/bootstrap/package/dist/css/bootstrap.min.css" "$dir/$bscss"
echo "$dir"
