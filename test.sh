#!/usr/bin/env bash
# The project's one test command: installs what the tests need when it is
# missing (Go modules; Debian's chromium, redis-server, tesseract-ocr,
# fonts-ocr-b, zxing-cpp-tools and webp for document screening; iptables for
# the fault suite's packet drops; the browser
# test's, the face engine sidecar's and the password range clients' npm packages), checks formatting and vet, runs every Go test with
# the race detector, then runs each fuzz target for a short, fixed time.
set -euo pipefail
cd "$(dirname "$0")"

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
command -v tesseract >/dev/null 2>&1 || need_apt+=(tesseract-ocr)
[ -f /usr/share/fonts/opentype/ocr-b/OCRBS.otf ] || need_apt+=(fonts-ocr-b)
command -v ZXingWriter >/dev/null 2>&1 || need_apt+=(zxing-cpp-tools)
command -v cwebp >/dev/null 2>&1 || need_apt+=(webp)
command -v iptables >/dev/null 2>&1 || need_apt+=(iptables) # test/system/faults: random packet drops
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    # Another process may hold the package manager's lock (unattended
    # upgrades, another install): wait for it, but only so long
    # (APT_LOCK_TIMEOUT seconds). An install that fails, for that or any
    # other reason, never stops the suite: the tests that need the missing
    # package skip, saying what to install.
    echo "== installing ${need_apt[*]}"
    lock=(-o "DPkg::Lock::Timeout=${APT_LOCK_TIMEOUT:-120}")
    if ! { apt-get "${lock[@]}" update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y -qq "${need_apt[@]}" >/dev/null; }; then
      # One by one: a package the distribution lacks must not keep the others out.
      for pkg in "${need_apt[@]}"; do
        DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y -qq "$pkg" >/dev/null 2>&1 ||
          echo "== could not install $pkg: the tests that need it will skip"
      done
    fi
  else
    echo "== missing ${need_apt[*]}: the tests that need them will skip"
  fi
fi
if [ -x test/system/browser/setup.sh ]; then
  echo "== browser test setup"
  test/system/browser/setup.sh || echo "== browser test setup failed: the browser tests will skip"
fi
if [ -x agents/examples/webbotauth/setup.sh ]; then
  echo "== web-bot-auth signer setup"
  agents/examples/webbotauth/setup.sh || echo "== web-bot-auth setup failed: the RFC 9421 interop test will skip"
fi
if [ -x risk/trust/examples/jose/setup.sh ]; then
  echo "== jose receipt verifier setup"
  risk/trust/examples/jose/setup.sh || echo "== jose setup failed: the npm receipt verifier test will skip"
fi
if [ -x verify/examples/recaptcha/setup.sh ]; then
  echo "== reCAPTCHA v3 backend (better-auth) setup"
  verify/examples/recaptcha/setup.sh || echo "== better-auth setup failed: the reCAPTCHA backend test will skip"
fi
if [ -x identity/face/sidecar/setup.sh ]; then
  echo "== face engine sidecar setup"
  identity/face/sidecar/setup.sh || echo "== face sidecar setup failed: the real face engine tests will skip"
fi
if [ -x test/system/passwords/setup.sh ]; then
  echo "== password range client test setup"
  test/system/passwords/setup.sh || echo "== password range client setup failed: the npm client test will skip"
fi

echo "== go mod download"
go mod download

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 -timeout 60m ./...

echo "== alert rules and dashboard under Prometheus's own parser (deploy/promcheck, a module of its own)"
(cd deploy/promcheck && go vet ./... && go test -count=1 ./...)
echo "== Helm chart under Helm's own engine and lint, objects strictly decoded (deploy/helmcheck, a module of its own)"
(cd deploy/helmcheck && go vet ./... && go test -count=1 ./...)

echo "== fuzz (time-boxed)"
since=$(mktemp)
for target in $(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do
  pkg=./$(dirname "${target#./}")
  for fn in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$target" | sed 's/^func //'); do
    echo "-- $pkg $fn"
    # A failure prints what the fuzzer said. One that left no new failing
    # input in testdata/fuzz is the fuzzing engine itself (a worker killed or
    # hung on a starved machine), so it is tried once more; a found input fails.
    for try in 1 2; do
      log=$(mktemp)
      if go test -run '^$' -fuzz "^${fn}\$" -fuzztime "${FUZZTIME:-15s}" -fuzzminimizetime=1s "$pkg" >"$log" 2>&1; then
        rm -f "$log"; break
      fi
      tail -n 40 "$log"; rm -f "$log"
      found=$(find "$pkg/testdata/fuzz/$fn" -type f -newer "$since" 2>/dev/null | head -n 1)
      if [ -n "$found" ] || [ "$try" = 2 ]; then
        [ -n "$found" ] && { echo "-- failing input $found:"; cat "$found"; }
        exit 1
      fi
      echo "-- $fn: the fuzzing engine failed without a failing input; once more"
    done
  done
done
echo "== all tests passed"
