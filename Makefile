# shardkeeper: `make run` starts a node on the embedded registry,
# `make test` runs every test against real etcd and ZooKeeper.
.PHONY: build run test

build:
	go build -o bin/shardkeeper ./cmd/shardkeeper

run: build
	./bin/shardkeeper serve

test:
	scripts/test.sh
