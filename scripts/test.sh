#!/usr/bin/env bash
# The project's one test command (README, .ci/run). It installs and starts
# what the tests need — a local Redis Cluster from Debian's redis-server,
# btcd and bchd for the sync tests, Debian's Chromium for the explorer's
# browser tests and Debian's Electrum wallet for the Electrum tests —
# idempotently, runs the static checks and every test, and stops the
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
# The Redis engine also runs its conformance suite on a plain, single-node
# server; the script starts one beside the cluster (and stops it with it).
if [ -z "${UTXOSTORE_REDIS_SINGLE_ADDR:-}" ]; then
  UTXOSTORE_REDIS_SINGLE_ADDR=$(./scripts/redis-cluster.sh single | tail -n 1)
  export UTXOSTORE_REDIS_SINGLE_ADDR
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

echo "== blockbook-client"
# TestBlockbookClient drives Blockbook's npm client against the daemon; it
# is installed once into the ignored .cache/ (the test skips, saying so,
# only on a machine without Node).
if command -v npm >/dev/null 2>&1 && [ ! -d .cache/blockbook-client/node_modules/blockbook-client ]; then
  npm install --prefix .cache/blockbook-client --no-audit --no-fund blockbook-client@0.7.8 >/dev/null
fi

echo "== chromium"
# The explorer's browser tests drive Debian's Chromium headless; it is
# installed once (the tests skip, saying so, only on a machine without
# apt-get and Chromium).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  if ! (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) >/dev/null; then
    echo "could not install chromium with apt-get" >&2; exit 1
  fi
fi

echo "== btcd"
# The sync tests follow real btcd nodes on simnet; btcd and btcctl are
# installed from the Go module proxy once.
if ! command -v btcd >/dev/null 2>&1; then
  go install github.com/btcsuite/btcd@v0.24.2
fi
if ! command -v btcctl >/dev/null 2>&1; then
  go install github.com/btcsuite/btcd/cmd/btcctl@v0.24.2
fi

echo "== bchd"
# ... and real bchd nodes (Bitcoin Cash) on regtest, installed once too. go
# install MODULE@VERSION reads the module's version list (for its
# deprecation), which some proxies refuse; a module that requires bchd
# installs it without.
if ! command -v bchd >/dev/null 2>&1; then
  if ! go install github.com/gcash/bchd@v0.22.2 2>/dev/null; then
    bchd_mod=$(mktemp -d)
    (cd "$bchd_mod" && go mod init install >/dev/null 2>&1 &&
      go get github.com/gcash/bchd@v0.22.2 && go install github.com/gcash/bchd)
    rm -rf "$bchd_mod"
  fi
fi

echo "== electrum"
# TestElectrumWallet runs Debian's Electrum wallet (4.3.4) as a headless
# daemon against the daemon's Electrum listener; it is installed once (the
# test skips, saying so, only on a machine without apt-get and Electrum).
if ! command -v electrum >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  if ! (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y electrum) >/dev/null; then
    echo "could not install electrum with apt-get" >&2; exit 1
  fi
fi

echo "== go test"
go test -timeout 20m "$@" ./...
