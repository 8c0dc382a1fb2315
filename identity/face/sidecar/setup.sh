#!/usr/bin/env bash
# Installs the face engine sidecar's pinned npm packages (package-lock.json:
# @vladmandic/human 3.3.6 with its models, @tensorflow/tfjs 4.22.0 and the
# wasm backend, jpeg-js, pngjs), and Node.js and npm from Debian when
# missing. Install scripts are off (.npmrc). Safe to run again: it installs
# only what is missing or stale.
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

major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "setup.sh: the face sidecar needs Node.js 18 or newer, found $(node --version)" >&2
  exit 1
fi

"../../../test/system/npm-ci-if-stale.sh" .
echo "setup.sh: face sidecar ready: node $(node --version), @vladmandic/human $(node -p 'require("./node_modules/@vladmandic/human/package.json").version')"
