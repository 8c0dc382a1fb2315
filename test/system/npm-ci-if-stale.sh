#!/usr/bin/env bash
# Usage: npm-ci-if-stale.sh DIR — runs `npm ci` in DIR when any package of
# its package-lock.json is missing or at another version, so every test
# folder with pinned npm packages installs the same way and only when
# needed. Browsers are never downloaded (Debian's Chromium is used).
set -euo pipefail
cd "$1"
stale=$(node -e '
  const lock = require("./package-lock.json");
  for (const [path, p] of Object.entries(lock.packages)) {
    if (!path) continue;
    let have = "";
    try { have = require("./" + path + "/package.json").version; } catch {}
    if (have !== p.version) { console.log(path); break; }
  }')
if [ -n "$stale" ]; then
  echo "$1: npm ci ($stale is missing or stale)"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
fi
