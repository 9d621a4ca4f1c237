# shardkeeper: `make run` starts a node on the embedded registry
# (`make run CONF=conf` with the example conf dir conf/), `make test` runs
# every test against real etcd and ZooKeeper, with upstream's example conf
# and e2e cases read in place from the shared reference (../shared next to
# the clone, or SHARDKEEPER_SHARED_DIR; testdata/README.md).
.PHONY: build run test

# The commit is stamped by the go command from a git clone; LDFLAGS passes
# it too, for a git worktree, where the go command cannot read it.
LDFLAGS ?= -X github.com/shardkeeper/shardkeeper/internal/version.linkedCommit=$(shell git rev-parse HEAD 2>/dev/null)

BIN ?= bin/shardkeeper

build:
	go build -buildvcs=auto -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/shardkeeper

CONF ?=
run: build
	$(BIN) serve $(if $(CONF),--conf $(CONF))

test:
	scripts/test.sh

# verify: the larger bounded model check of the worker-id fence protocol
# (3 nodes; docs/guarantees.md, "What is model-checked"). Needs spin and gcc
# (scripts/servers.sh installs them) and a few GiB of memory (MODEL_MEM, MiB).
.PHONY: verify
verify:
	bash -c 'source scripts/servers.sh && install_servers' && scripts/model.sh verify

# image: the container image (deploy/container/Containerfile), FROM scratch
# with the static binary built here, with podman or docker, whichever is
# installed; IMAGE names it.
.PHONY: image
IMAGE ?= shardkeeper:latest
image:
	scripts/image.sh $(IMAGE)

# bench-workerid: the worker-id startup benchmark (N nodes at once, ours on
# a fresh and on a ledgered cluster, against ShardingSphere's algorithm) on
# real etcd and ZooKeeper, which it starts itself: 5 rounds, the baseline
# (minutes) in the first, then a summary of the targets over the rounds with
# the load average. BASELINE_MAX=1024 also runs the baseline at 1024 nodes
# (very slow); ROUNDS changes the rounds; BENCH_ARGS passes more flags (see
# tools/workeridbench).
.PHONY: bench-workerid
BASELINE_MAX ?= 256
ROUNDS ?= 5
bench-workerid:
	bash -c 'set -eo pipefail; ulimit -n 65536 2>/dev/null || ulimit -n "$$(ulimit -Hn)"; \
		source scripts/servers.sh && start_servers && \
		go run ./tools/workeridbench -baseline-max $(BASELINE_MAX) -rounds $(ROUNDS) $(BENCH_ARGS)'

# bench-snowflake: the generator benchmark: shardkeeper against
# bwmarrin/snowflake and sony/sonyflake in one process, rates and CPU per key.
# Run it on a quiet machine: the rate targets need the cores.
.PHONY: bench-snowflake
bench-snowflake:
	go run ./tools/snowflakebench -rounds 3

# bench-metadata: the metadata benchmarks on real etcd and ZooKeeper
# (a props change seen by 10 nodes; a read data source state seen by 3;
# 10,000 tables persisted and loaded).
.PHONY: bench-metadata
bench-metadata:
	bash -c 'set -eo pipefail; source scripts/servers.sh && start_servers && \
		go test ./internal/metadata -run "^$$" -bench "PropsPropagation|DataSourceStatePropagation" -benchtime 200x && \
		go test ./internal/metadata -run "^$$" -bench "Tables10k" -benchtime 1x -timeout 30m'

# bench-rules: CREATE SHARDING TABLE RULE confirmed by 10 nodes, p50/p99 on
# real etcd and ZooKeeper next to SET DIST VARIABLE on the same cluster in
# the same run (200 statements of each per registry).
.PHONY: bench-rules
bench-rules:
	bash -c 'set -eo pipefail; source scripts/servers.sh && start_servers && \
		go test ./internal/console -run "^$$" -bench "CreateShardingTableRule" -benchtime 20x -timeout 10m'

# bench-rules-scale: CREATE and ALTER SHARDING TABLE RULE, SET DIST
# VARIABLE and SHOW SHARDING TABLE RULES next to 0, 1,000 and 10,000
# existing sharding tables on 3 nodes, each a serve process of the built
# binary, on real etcd and ZooKeeper in one run: p50/p99, CPU per
# statement on each node, each node's RSS and the ratios to the empty
# database (tools/rulescalebench; RULE_SCALE_TABLES and
# RULE_SCALE_STATEMENTS change the sizes and the statements per size).
.PHONY: bench-rules-scale
RULE_SCALE_TABLES ?= 0,1000,10000
RULE_SCALE_STATEMENTS ?= 10
bench-rules-scale: build
	bash -c 'set -eo pipefail; source scripts/servers.sh && start_servers && \
		go run ./tools/rulescalebench -bin $(BIN) -tables $(RULE_SCALE_TABLES) -statements $(RULE_SCALE_STATEMENTS)'

# bench-distsql: the DistSQL console over the MySQL protocol on real etcd,
# in one run: SHOW COMPUTE NODES with 100 registered nodes sent at 1,000
# statements/s (p50/p99 next to SELECT 1 through the same front end, each
# with go-sql-driver and with a client that decodes no value), its
# closed-loop cost, and SHOW NEXT KEYS [COUNT 1000] keys/s next to
# PostgreSQL nextval (pgbench at 127.0.0.1:5432 db test). Installs
# postgresql-client when pgbench is missing.
.PHONY: bench-distsql
bench-distsql:
	@command -v pgbench >/dev/null || { sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq postgresql-client >/dev/null; }
	bash -c 'set -eo pipefail; source scripts/servers.sh && start_servers && \
		go test ./internal/console -run "^$$" -bench "DistSQL(ShowComputeNodes|NextKeys)\b" -benchtime 1x -timeout 10m && \
		go test ./internal/console -run "^$$" -bench "DistSQLShowComputeNodesCPU" -benchtime 4000x'

# bench-keys: the key-service benchmark on loopback, in one run: a node's
# single-key requests/s over RESP (redis-benchmark, the same command line as
# against Redis), over UDP and RESP with keybench's own generator (the same
# one against Redis) and HTTP (wrk) next to Redis INCR at 127.0.0.1:6379 and
# PostgreSQL nextval (pgbench) at 127.0.0.1:5432 db test, batched keys/s, and
# p99 at half the peak rate (open-loop generator). Installs wrk, redis-tools
# and postgresql-client when missing. KEYBENCH_ARGS passes more flags
# (see tools/keybench).
.PHONY: bench-keys
bench-keys:
	@missing=""; \
	command -v wrk >/dev/null || missing="$$missing wrk"; \
	command -v redis-benchmark >/dev/null || missing="$$missing redis-tools"; \
	command -v pgbench >/dev/null || missing="$$missing postgresql-client postgresql-contrib"; \
	if [ -n "$$missing" ]; then \
		sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing >/dev/null; \
	fi
	go build -o bin/keybench ./tools/keybench
	./bin/keybench $(KEYBENCH_ARGS)
