#!/usr/bin/env bash
# Installs the pinned npm packages of package-lock.json (better-auth, whose
# captcha plugin is the reCAPTCHA v3 backend) that
# http/verify_recaptcha_vendor_test.go runs against a node. Safe to run
# again: it installs only when a package is missing or at another version.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null 2>&1 || { echo "recaptcha/setup.sh: node is missing" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "recaptcha/setup.sh: better-auth needs Node.js 20 or newer, found $(node --version)" >&2
  exit 1
fi
"../../../test/system/npm-ci-if-stale.sh" .
echo "recaptcha/setup.sh: ready: node $(node --version), better-auth $(node -p 'require("./node_modules/better-auth/package.json").version')"
