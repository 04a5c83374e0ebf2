package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/internal/btcdtest"
	"github.com/utxostore/utxostore/internal/peertest"
)

// TestServeBansAPeerThatSendsInvalidData: a node whose headers do not
// form a chain is banned by serve --peer: /health/ready fails naming the
// ban and the invalid data, the metric says until when, and no connection
// is made again, also after a restart of the daemon; sync --stop-at-tip
// refuses at once, saying so.
func TestServeBansAPeerThatSendsInvalidData(t *testing.T) {
	genesis := *chaincfg.SimNetParams.GenesisHash
	node := &peertest.Peer{Headers: func() []*wire.BlockHeader {
		return []*wire.BlockHeader{peertest.Header(genesis, chainhash.Hash{1}), peertest.Header(chainhash.Hash{2}, chainhash.Hash{3})}
	}}
	addr := node.Listen(t)
	data := t.TempDir()
	serve := func() *daemon {
		d := startDaemon(t, "serve", "--create", "--network", "simnet", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--peer", addr)
		btcdtest.WaitFor(t, 60*time.Second, "the daemon to report the ban", func() (bool, string) {
			code, body := httpGet(t, "http://"+d.http+"/health/ready")
			return code == http.StatusServiceUnavailable && strings.Contains(body, "is banned until"), body
		})
		_, body := httpGet(t, "http://"+d.http+"/health/ready")
		mustContain(t, "/health/ready", body, "the peer "+addr+" is banned until", "invalid data from the peer: headers do not connect to each other")
		_, metrics := httpGet(t, "http://"+d.http+"/metrics")
		mustContain(t, "metrics", metrics, "utxostore_follow_peer_banned_until_seconds 1", "utxostore_follow_bans_total")
		return d
	}
	d := serve()
	btcdtest.WaitFor(t, 60*time.Second, "the daemon's log line of the ban", func() (bool, string) {
		return strings.Contains(d.log(), "not connecting until then"), d.log()
	})
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("the daemon did not stop cleanly: %v\n%s", err, d.log())
	}
	d = serve()
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("the restarted daemon did not stop cleanly: %v\n%s", err, d.log())
	}
	_, stderr, err := run(t, "sync", "--quiet", "--stop-at-tip", "--network", "simnet", "--data", data, "--peer", addr)
	if err == nil {
		t.Fatal("sync --stop-at-tip from a banned peer succeeded")
	}
	mustContain(t, "sync's refusal", stderr, "the peer "+addr+" is banned until", filepath.Join(data, "follow", "bans.json"))
	if n := node.Connections(); n != 1 {
		t.Errorf("%d connections to the banned peer, want 1", n)
	}
}
