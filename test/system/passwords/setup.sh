#!/usr/bin/env bash
# Installs what the password range client test needs on a fresh Debian
# machine: Node.js and npm when missing, then the pinned npm packages of
# package-lock.json (hibp, @zxcvbn-ts/core, @zxcvbn-ts/matcher-pwned, and
# @zxcvbn-ts/language-common, the source list of the embedded default
# corpus that go generate in risk/passwords reads). Safe to run again: it
# installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup.sh: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

# hibp 15 needs Node.js 20.19 or newer.
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)'; then
  echo "setup.sh: hibp needs Node.js 20.19 or newer, found $(node --version)" >&2
  exit 1
fi

"../npm-ci-if-stale.sh" .
echo "setup.sh: ready: node $(node --version), hibp $(node -p 'require("./node_modules/hibp/package.json").version'), matcher-pwned $(node -p 'require("./node_modules/@zxcvbn-ts/matcher-pwned/package.json").version')"
