#!/usr/bin/env bash
# Installs the pinned npm packages of package-lock.json (panva's jose) that
# risk/api/trust_receipt_alg_test.go verifies decision receipts with. Safe to
# run again: it installs only when a package is missing or at another
# version.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null 2>&1 || { echo "jose/setup.sh: node is missing" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "jose/setup.sh: jose 6 needs Node.js 20 or newer, found $(node --version)" >&2
  exit 1
fi
"../../../../test/system/npm-ci-if-stale.sh" .
echo "jose/setup.sh: ready: node $(node --version), jose $(node -p 'require("./node_modules/jose/package.json").version')"
