// Package e2e holds end-to-end tests: real `shardkeeper serve` processes
// (built once per test run with go build) on real etcd and ZooKeeper,
// driven through their HTTP API, and the status page in headless Chromium.
// Run them with `make test`, which starts the servers.
package e2e
