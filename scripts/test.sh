#!/usr/bin/env bash
# Runs every test against real servers: installs etcd, ZooKeeper, SPIN and
# Chromium from Debian packages when missing, starts etcd and ZooKeeper on
# free loopback ports, runs go vet (also for macOS, with macOS and Windows
# builds of the daemon), a gofmt check, staticcheck and
# `go test -race -v ./...` with their addresses (a test that needs a server
# or the shared reference fails, never skips, under this script), then the model check of the
# worker-id fence protocol (scripts/model.sh test: 2 nodes, 3 worker ids,
# every fault, and the three control models' counterexamples), then a short
# chaos run, then stops them.
# Extra arguments go to `go test` (e.g. scripts/test.sh -run Conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/servers.sh
start_servers
# Tests that read the shared reference (../shared next to the clone, or
# SHARDKEEPER_SHARED_DIR: upstream's example configuration and end-to-end
# cases, read in place) fail instead of skipping when it is missing.
export SHARDKEEPER_REQUIRE_SHARED=1
go vet ./...
# The daemon builds and every package vets off Linux too (file access and
# the key service have no Linux-only code paths left unbuilt). On Windows
# every package with code builds but the benchmark and chaos tools under
# tools/, which drive Linux (namespaces, rlimits, epoll) by design.
GOOS=darwin go vet ./...
GOOS=darwin go build -o /dev/null ./cmd/shardkeeper
GOOS=windows go build -o /dev/null ./cmd/shardkeeper
GOOS=windows go build $(GOOS=windows go list -f '{{if .GoFiles}}{{.ImportPath}}{{end}}' ./... | grep -v '/tools/')
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go test -race -count=1 -v -timeout 40m "$@" ./...

# The fence protocol, model-checked (docs/guarantees.md, "What is model-checked").
if [ $# -eq 0 ]; then
	scripts/model.sh test
fi

# The short chaos run (needs root): real 3-member etcd and ZooKeeper
# ensembles and 6 node processes in network namespaces under a seeded fault
# schedule (an operator deleting fences and reservations among the faults),
# then the same schedule as the three negative controls: without the fence
# (lease only), with the fence but the floor ignored, and with a deleted
# fence read as floor 0. It fails on any duplicate key, (worker id, ms)
# overlap or fence violation of the fenced run, and when the lease-only or
# the absent-fence control finds no duplicate or the floor control neither
# a duplicate nor an overlap (the faults would not be biting).
if [ $# -eq 0 ]; then
	go build -o bin/chaos ./tools/chaos
	bin/chaos run --registry both --duration 45s --control-duration 30s --rate 10000 --seed 1 \
		--out "$(mktemp -d /tmp/shardkeeper-chaos-ci.XXXXXX)"
fi

# The short DistSQL chaos run (needs root): 3 shardkeeper nodes on the same
# ensembles and faults (no clock faults, no operator lane), two clients per
# node running rule changes and reads through the consoles and the HTTP
# API, a reader per node and two racers per node. It fails when the
# history is not linearizable per rule item and view, when the views do
# not agree with each other and the registry within 30 s of the faults'
# end, and when either negative control finds no violation: changes
# written without their conditions (overwrite), and changes answered
# before the registry confirms their commit (early-ack). About 3-4 min
# here; docs/chaos.md has the figures for seeds 1-3.
# SHARDKEEPER_CHAOS_DISTSQL=0 leaves it out.
if [ $# -eq 0 ] && [ "${SHARDKEEPER_CHAOS_DISTSQL:-1}" != 0 ]; then
	go build -o bin/shardkeeper ./cmd/shardkeeper
	bin/chaos run --registry both --workload distsql --duration 30s --control-duration 15s --seed 1 \
		--out "$(mktemp -d /tmp/shardkeeper-chaos-ci.XXXXXX)"
fi
