# shardkeeper: `make run` starts a node on the embedded registry,
# `make test` runs every test against real etcd and ZooKeeper.
.PHONY: build run test

build:
	go build -o bin/shardkeeper ./cmd/shardkeeper

run: build
	./bin/shardkeeper serve

test:
	scripts/test.sh

# bench-workerid: issue 4's worker-id startup benchmark (N nodes at once, ours
# against ShardingSphere's algorithm) on real etcd and ZooKeeper, which it
# starts itself. BASELINE_MAX=1024 also runs the baseline at 1024 nodes (very
# slow); BENCH_ARGS passes more flags (see internal/bench/workeridbench).
.PHONY: bench-workerid
BASELINE_MAX ?= 256
bench-workerid:
	bash -c 'set -eo pipefail; ulimit -n 65536 2>/dev/null || ulimit -n "$$(ulimit -Hn)"; \
		source scripts/servers.sh && start_servers && \
		go run ./internal/bench/workeridbench -baseline-max $(BASELINE_MAX) $(BENCH_ARGS)'
