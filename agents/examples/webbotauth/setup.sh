#!/usr/bin/env bash
# Installs the pinned npm packages of package-lock.json (Cloudflare's
# web-bot-auth) that http/agents_webbotauth_test.go signs with. Safe to run
# again: it installs only when a package is missing or at another version.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null 2>&1 || { echo "webbotauth/setup.sh: node is missing" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "webbotauth/setup.sh: WebCrypto Ed25519 needs Node.js 20 or newer, found $(node --version)" >&2
  exit 1
fi
"../../../test/system/npm-ci-if-stale.sh" .
echo "webbotauth/setup.sh: ready: node $(node --version), web-bot-auth $(node -p 'require("./node_modules/web-bot-auth/package.json").version')"
