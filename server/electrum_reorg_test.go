package server_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/server"
)

// TestElectrumReadsAgainOnlyWhatAReorganisationTouched: after a
// reorganisation the daemon reads again the statuses of the scripts the
// disconnected and the connected blocks touched, and no other: a wallet
// paid by a disconnected block hears its new status, one the blocks did
// not touch is left alone. The daemon did not hear of disconnected
// blocks, and read every subscribed status again after each
// reorganisation.
func TestElectrumReadsAgainOnlyWhatAReorganisationTouched(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := trustingPathOfFive(t)
	paid, other, spare := []byte{0x51}, []byte{0x52}, []byte{0x53}
	five := ownBlockOf(t, chainBlocks[4].Hash, 5, paid)
	if err := path.Connect(ctx, five, 5); err != nil {
		t.Fatal(err)
	}
	srv, _ := servePathForTest(t, path, server.Options{Network: "mainnet", ElectrumAddr: "127.0.0.1:0"})
	path.OnConnect(srv.NotifyBlock)
	path.OnDisconnect(srv.NotifyDisconnect)

	// A headers subscriber hears of block 6, the first block the daemon
	// hears of, after which it reads every subscribed status: there is
	// none yet.
	headers := newElectrumClient(t, srv)
	headers.call("blockchain.headers.subscribe", "[]")
	six := ownBlockOf(t, five.Hash, 6, spare)
	if err := path.Connect(ctx, six, 6); err != nil {
		t.Fatal(err)
	}
	headers.waitTip(6)

	// A wallet subscribes to the script block 5 pays, and to the script
	// of block 1's coinbase, which no block of the reorganisation touches.
	wallet := newElectrumClient(t, srv)
	paidHash, otherHash := scriptHashHex(paid), scriptHashHex(chainBlocks[1].Txs[0].Msg.TxOut[0].PkScript)
	if status := wallet.call("blockchain.scripthash.subscribe", fmt.Sprintf("[%q]", paidHash)); status == nil {
		t.Fatal("the script block 5 pays has no status")
	}
	wallet.call("blockchain.scripthash.subscribe", fmt.Sprintf("[%q]", otherHash))
	before := statusReads(t, srv)

	// Blocks 5 and 6 give way to a branch of three blocks paying another
	// script: the paid script's status goes, the other's stays.
	var branch []*chain.Block
	prev := chainBlocks[4].Hash
	for height := uint32(5); height <= 7; height++ {
		b := ownBlockOf(t, prev, height, other)
		branch, prev = append(branch, b), b.Hash
	}
	if err := path.Reorg(ctx, []*chain.Block{six, five}, branch); err != nil {
		t.Fatal(err)
	}
	if status := wallet.waitStatus(paidHash); status != nil {
		t.Fatalf("after the reorganisation the paid script's status is %v, want none", status)
	}
	// One more block pays the script again: once its status arrives, the
	// rounds of notifications before it are over.
	eight := ownBlockOf(t, prev, 8, paid)
	if err := path.Connect(ctx, eight, 8); err != nil {
		t.Fatal(err)
	}
	if status := wallet.waitStatus(paidHash); status == nil {
		t.Fatal("block 8 paid the script, and its status is none")
	}
	if read := statusReads(t, srv) - before; read != 2 {
		t.Fatalf("the notifier read %v statuses over the reorganisation and block 8, want 2 (the paid script's, once each)", read)
	}
}

// electrumClient is a connection to the daemon's Electrum server that
// tells answers from notifications.
type electrumClient struct {
	t      *testing.T
	c      net.Conn
	r      *bufio.Reader
	nextID int
	// notes are the notifications read while waiting for an answer.
	notes []electrumNote
}

type electrumNote struct {
	Method string `json:"method"`
	Params []any  `json:"params"`
}

func newElectrumClient(t *testing.T, srv *server.Server) *electrumClient {
	c, r := dialElectrum(t, srv, 30*time.Second)
	return &electrumClient{t: t, c: c, r: r}
}

// read returns the next message: an answer (id set) or a notification.
func (e *electrumClient) read() (id *int, result any, note electrumNote) {
	e.t.Helper()
	line, err := e.r.ReadBytes('\n')
	if err != nil {
		e.t.Fatalf("reading from the Electrum server: %v", err)
	}
	var m struct {
		ID     *int   `json:"id"`
		Result any    `json:"result"`
		Error  any    `json:"error"`
		Method string `json:"method"`
		Params []any  `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.Error != nil {
		e.t.Fatalf("%s (%v)", line, err)
	}
	return m.ID, m.Result, electrumNote{m.Method, m.Params}
}

// call sends method with params (a JSON array) and returns the result.
func (e *electrumClient) call(method, params string) any {
	e.t.Helper()
	e.nextID++
	if _, err := fmt.Fprintf(e.c, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", e.nextID, method, params); err != nil {
		e.t.Fatal(err)
	}
	for {
		id, result, note := e.read()
		if id == nil {
			e.notes = append(e.notes, note)
			continue
		}
		if *id != e.nextID {
			e.t.Fatalf("answer %d to call %d", *id, e.nextID)
		}
		return result
	}
}

// next returns the next notification of method.
func (e *electrumClient) next(method string) electrumNote {
	e.t.Helper()
	for {
		var n electrumNote
		if len(e.notes) > 0 {
			n, e.notes = e.notes[0], e.notes[1:]
		} else {
			var id *int
			if id, _, n = e.read(); id != nil {
				e.t.Fatalf("an answer (%d) while no call waits", *id)
			}
		}
		if n.Method == method {
			return n
		}
	}
}

// waitTip waits for the headers notification of the tip at height.
func (e *electrumClient) waitTip(height int) {
	e.t.Helper()
	for {
		n := e.next("blockchain.headers.subscribe")
		if tip, ok := n.Params[0].(map[string]any); ok && tip["height"] == float64(height) {
			return
		}
	}
}

// waitStatus returns the status of the next notification of sh.
func (e *electrumClient) waitStatus(sh string) any {
	e.t.Helper()
	for {
		n := e.next("blockchain.scripthash.subscribe")
		if len(n.Params) == 2 && n.Params[0] == sh {
			return n.Params[1]
		}
	}
}

// scriptHashHex is Electrum's script hash of script.
func scriptHashHex(script []byte) string {
	sum := sha256.Sum256(script)
	slices.Reverse(sum[:])
	return hex.EncodeToString(sum[:])
}

// statusReads is how many statuses the daemon's Electrum notifier has
// read again (utxostore_electrum_notify_status_reads_total).
func statusReads(t *testing.T, srv *server.Server) float64 {
	t.Helper()
	families, err := srv.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "utxostore_electrum_notify_status_reads_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no utxostore_electrum_notify_status_reads_total in the daemon's metrics")
	return 0
}
