package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// everyOtherGetFails is the daemon's backend whose transaction reads
// fail one in two, as reads of a mempool too large to read within one
// request's time run out of it part way.
type everyOtherGetFails struct {
	server.Backend
	calls atomic.Int64
}

func (b *everyOtherGetFails) Get(ctx context.Context, txid chainhash.Hash, fields ...utxo.Field) (*utxo.Meta, error) {
	if b.calls.Add(1)%2 == 0 {
		return nil, errors.New("reading the transaction ran out of time")
	}
	return b.Backend.Get(ctx, txid, fields...)
}

// TestElectrumReadsAMempoolNoOneRequestCanRead: when no one request can
// read every new unmined transaction (here each request's reads fail
// part way), the requests after it go on from what it read, and the
// mempool gets read. The daemon used to drop what a request had read and
// start again at every request, so a mempool that grew by more than a
// request could read was never read: every balance, history and
// subscription failed, and no subscriber heard of a change.
func TestElectrumReadsAMempoolNoOneRequestCanRead(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := indexedPathAt(t, 4, 4)
	backend := &everyOtherGetFails{Backend: server.NewBackend(path)}
	srv, _ := serveBackendForTest(t, backend, server.Options{Network: "mainnet", ElectrumAddr: "127.0.0.1:0"})

	// Three unmined transactions, spending blocks 1 to 3's coinbases,
	// pay one script.
	pay := []byte{0x51}
	for _, b := range chainBlocks[1:] {
		spend := wire.NewMsgTx(1)
		spend.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: b.Txs[0].ID}, []byte{0x51}, nil))
		spend.AddTxOut(wire.NewTxOut(49e8, pay))
		if _, err := path.Store().Create(ctx, chain.NewTx(spend), 4); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(pay)
	slices.Reverse(sum[:])
	sh := hex.EncodeToString(sum[:])

	c, r := dialElectrum(t, srv, 30*time.Second)
	var last string
	// Each request reads at least one transaction more than the one
	// before, or fails its first read and leaves the next request its
	// first: seven requests read three.
	for range 7 {
		if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_mempool","params":[%q]}`+"\n", sh); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		last = string(line)
		var answer struct {
			Result []any `json:"result"`
		}
		if err := json.Unmarshal(line, &answer); err != nil {
			t.Fatal(err)
		}
		if len(answer.Result) == 3 {
			return
		}
	}
	t.Fatalf("the mempool of three transactions is still not read: %s", last)
}
