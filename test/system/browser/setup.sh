#!/usr/bin/env bash
# Installs what the browser tests need on a fresh Debian machine: Debian's
# Chromium (playwright-core drives it; no browser is ever downloaded), Node.js
# and npm when missing, then the pinned npm packages of package-lock.json.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")"

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
need=()
[ -x "$chromium" ] || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup.sh: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "setup.sh: playwright-core needs Node.js 20 or newer, found $(node --version)" >&2
  exit 1
fi

"../npm-ci-if-stale.sh" .
echo "setup.sh: ready: node $(node --version), $("$chromium" --version 2>/dev/null | head -1), playwright-core $(node -p 'require("./node_modules/playwright-core/package.json").version')"
