package server_test

import (
	"net/http"
	"testing"

	"github.com/utxostore/utxostore/server"
)

// TestEstimateFeeReadsEachBlockOnce: the fee estimator keeps each recent
// block's rate so that a block is read once, and a second estimate over
// an unchanged chain reads no block again. It used to read each block
// (and look up each of its transactions in the index) to learn the hash
// it compared its kept rate with, so every estimate read up to 144 blocks.
func TestEstimateFeeReadsEachBlockOnce(t *testing.T) {
	srv, _ := indexedDaemon(t, 20, server.Options{})
	base := "http://" + srv.HTTPAddr()
	url := base + "/api/v2/estimatefee/1008"
	if code := getCode(t, url); code != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, code)
	}
	first := operations(t, base, "blockstore.Block")
	if first == 0 {
		t.Fatal("the first estimate read no block")
	}
	for i := 0; i < 5; i++ {
		if code := getCode(t, url); code != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d", url, code)
		}
	}
	if n := operations(t, base, "blockstore.Block"); n != first {
		t.Errorf("5 more estimates over the same chain read %d more blocks (the first read %d); want 0", n-first, first)
	}
}
