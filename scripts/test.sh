#!/usr/bin/env bash
# The project's one test command (README, .ci/run). It installs and starts
# what the tests need — a local Redis Cluster from Debian's redis-server,
# btcd for the sync tests — idempotently, runs the static checks and every test, and stops the
# cluster again if it started it.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:$(go env GOPATH)/bin"

started_cluster=no
if [ -z "${UTXOSTORE_REDIS_ADDRS:-}" ]; then
  if ! ./scripts/redis-cluster.sh status >/dev/null 2>&1; then
    started_cluster=yes
  fi
  UTXOSTORE_REDIS_ADDRS=$(./scripts/redis-cluster.sh start | tail -n 1)
  export UTXOSTORE_REDIS_ADDRS
fi
cleanup() {
  if [ "$started_cluster" = yes ]; then
    ./scripts/redis-cluster.sh stop >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
if ! command -v staticcheck >/dev/null 2>&1; then
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
staticcheck ./...

echo "== btcd"
# The sync tests follow real btcd nodes on simnet (they skip, saying so,
# when btcd is missing and cannot be installed).
if ! command -v btcd >/dev/null 2>&1; then
  go install github.com/btcsuite/btcd@v0.24.2 || echo "btcd could not be installed: the sync tests will skip"
fi
if ! command -v btcctl >/dev/null 2>&1; then
  go install github.com/btcsuite/btcd/cmd/btcctl@v0.24.2 || true
fi

echo "== go test"
go test -timeout 20m "$@" ./...
