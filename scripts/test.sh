#!/usr/bin/env bash
# Runs every test against real servers: installs etcd, ZooKeeper and
# Chromium from Debian packages when missing, starts etcd and ZooKeeper on
# free loopback ports, runs go vet, a gofmt check, staticcheck and
# `go test -race -v ./...` with their addresses (a test that needs a server
# fails, never skips, under this script), then stops them.
# Extra arguments go to `go test` (e.g. scripts/test.sh -run Conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/servers.sh
start_servers
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go test -race -count=1 -v -timeout 40m "$@" ./...
