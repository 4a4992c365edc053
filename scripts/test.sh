#!/usr/bin/env bash
# Runs every lancer test, interop with real Lance included. It installs what
# the tests need (the pinned Lance reference and playwright-core, from npm;
# Debian's chromium, for the browser UI test) and fails loudly when a tool
# or the shared fixtures are missing: no test is skipped for want of one.
# CI runs it through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

die() { echo "test: $*" >&2; exit 1; }
for tool in go node npm git; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not installed"
done

fixtures=${LANCER_FIXTURES:-$repo/../shared/fixtures}
[ -f "$fixtures/lance/MANIFEST.json" ] || die "shared fixtures not found at $fixtures (set LANCER_FIXTURES to the folder holding lance/ and encodings/)"
export LANCER_FIXTURES=$(cd "$fixtures" && pwd)

echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
[ -z "$unformatted" ] || die "gofmt would change: $unformatted"
go vet ./...

echo "== Chromium (the browser UI test, cmd/lancer/internal/demo/ui_e2e_test.go, drives /usr/bin/chromium)"
if [ ! -x /usr/bin/chromium ]; then
	sudo=""
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "/usr/bin/chromium is missing and sudo is not available to install it (apt-get install chromium)"
		sudo=sudo
	fi
	$sudo apt-get update || die "apt-get update failed (needed to install chromium)"
	$sudo apt-get install -y chromium || die "apt-get install chromium failed"
	[ -x /usr/bin/chromium ] || die "chromium was installed but /usr/bin/chromium is missing"
fi

echo "== installing the Lance reference (@lancedb/lancedb and playwright-core, pinned in interop/package.json)"
ref=$repo/.cache/lance-ref
mkdir -p "$ref"
cp interop/package.json "$ref/package.json"
(cd "$ref" && npm install --no-audit --no-fund --loglevel=error) || die "npm install of the Lance reference failed"
node -e "require('$ref/node_modules/@lancedb/lancedb')" || die "the Lance reference does not load"
node -e "require('$ref/node_modules/playwright-core')" || die "playwright-core (for the browser UI test) does not load"
export LANCER_LANCE_REF=$ref

echo "== installing old LanceDB releases (interop/releases.json, one folder each: their apache-arrow peers differ)"
releases=$repo/.cache/lance-releases
mkdir -p "$releases"
node -e 'for (const r of require(process.argv[1]).releases) console.log(r.name + " " + r.package)' "$repo/interop/releases.json" |
while read -r name pkg; do
	mkdir -p "$releases/$name"
	[ -f "$releases/$name/package.json" ] || echo '{"private": true}' > "$releases/$name/package.json"
	(cd "$releases/$name" && npm install --no-audit --no-fund --loglevel=error "$pkg") || die "npm install of $pkg failed"
done
export LANCER_LANCE_RELEASES=$releases

echo "== versitygw (the local S3 server of the S3 tests and bench -suite=s3; internal/s3test finds it in .cache/bin)"
GOBIN=$repo/.cache/bin go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 || die "go install of versitygw failed"

echo "== installing Azurite (Azure blob emulator for the az:// tests in blob/ and dataset/), pinned"
azurite=$repo/.cache/azurite
mkdir -p "$azurite"
printf '{"private": true, "dependencies": {"azurite": "3.37.0"}}\n' > "$azurite/package.json"
(cd "$azurite" && npm install --no-audit --no-fund --loglevel=error) || die "npm install of azurite failed"
[ -x "$azurite/node_modules/.bin/azurite-blob" ] || die "azurite-blob is missing after npm install"
export LANCER_AZURITE=$azurite/node_modules/.bin/azurite-blob

echo "== go test"
go test -count=1 -timeout 30m ./...

# The packages where goroutines share state (stores and their retries and
# read-ahead, parallel search (vector and the probed partitions of Lance-format
# indices), the server's caches, locks and multipart
# uploads, branch refs) run again under the race detector. -short leaves
# out only the long scale tests there.
echo "== go test -race (concurrency-heavy packages)"
go test -race -short -count=1 ./blob/... ./vector/... ./dataset/vecindex/... ./branch/... ./server/...
