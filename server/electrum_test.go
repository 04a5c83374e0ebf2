package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/server"
)

// dialElectrum connects to the daemon's Electrum listener, for a test
// that writes and reads raw lines; every read and write fails after d.
func dialElectrum(t *testing.T, srv *server.Server, d time.Duration) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", srv.ElectrumAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReaderSize(c, 1<<20)
}

// TestElectrumAnswersAPipeliningClient: a client that writes many
// requests at once and reads every answer as it comes (how a wallet
// subscribes to its addresses) gets every answer. The daemon used to cut
// such a client off once more than its queue of answers waited unsent,
// which happens as soon as requests are answered faster than the
// connection carries them.
func TestElectrumAnswersAPipeliningClient(t *testing.T) {
	srv, _ := indexedDaemon(t, 3, server.Options{})
	c, r := dialElectrum(t, srv, time.Minute)
	const n = 20_000
	var lines strings.Builder
	for id := range n {
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%d,"method":"blockchain.block.header","params":[%d]}`+"\n", id, id%3)
	}
	written := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte(lines.String()))
		written <- err
	}()
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d of %d answers: %v", i, n, err)
		}
		var a struct {
			ID    int             `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.ID != i || a.Error != nil {
			t.Fatalf("answer %d: %.200s (%v)", i, line, err)
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}

// TestElectrumBoundsABatchsAnswers: a batch whose answers would pass
// 16 MiB (here a 64 KiB line of requests for 2,016 headers each, answered
// with 600 times its size) is refused with an error saying what to do, not built
// in memory, and the connection goes on serving.
func TestElectrumBoundsABatchsAnswers(t *testing.T) {
	srv, _ := indexedDaemon(t, 300, server.Options{})
	c, r := dialElectrum(t, srv, time.Minute)
	const one = `{"jsonrpc":"2.0","id":1,"method":"blockchain.block.headers","params":[0,2016]}`
	line := "[" + strings.TrimSuffix(strings.Repeat(one+",", (64<<10)/(len(one)+1)), ",") + "]\n"
	ask := func(line string) string {
		t.Helper()
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		answer, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return answer
	}
	if answer := ask(line); len(answer) > 1<<20 || !strings.Contains(answer, "send fewer requests at once") {
		t.Fatalf("a batch of %d bytes whose answers pass the bound was answered with %d bytes: %.300s", len(line), len(answer), answer)
	}
	if answer := ask(`[` + one + `,` + one + `]` + "\n"); !strings.Contains(answer, `"count":300`) {
		t.Fatalf("a small batch after the refused one: %.300s", answer)
	}
}

// failingHistory is the daemon's backend whose address index fails the
// next fail history reads, as a read of the index's files that fails or
// runs out of time does.
type failingHistory struct {
	server.Backend
	fail atomic.Int32
}

func (b *failingHistory) AddressIndex() blockbook.AddressIndexReads {
	return failingIndex{AddressIndexReads: b.Backend.AddressIndex(), fail: &b.fail}
}

type failingIndex struct {
	blockbook.AddressIndexReads
	fail *atomic.Int32
}

func (i failingIndex) History(ctx context.Context, addrDesc []byte, page, pageSize int, fromHeight, toHeight uint32) (*index.History, error) {
	if i.fail.Add(-1) >= 0 {
		return nil, errors.New("reading the index's history failed")
	}
	return i.AddressIndexReads.History(ctx, addrDesc, page, pageSize, fromHeight, toHeight)
}

// TestElectrumNotifiesAStatusItFailedToRead: when a block changes a
// subscribed script hash's status and the daemon's read of that status
// fails once, the subscriber still hears of the new status. The daemon
// used to skip it, and the wallet showed the old balance until it
// reconnected.
func TestElectrumNotifiesAStatusItFailedToRead(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := indexedPathAt(t, 3, 2)
	backend := &failingHistory{Backend: server.NewBackend(path)}
	srv, _ := serveBackendForTest(t, backend, server.Options{Network: "mainnet", ElectrumAddr: "127.0.0.1:0"})
	path.OnConnect(srv.NotifyBlock)

	// Block 2's coinbase pays a script of its own.
	sh := scriptHashHex(chainBlocks[2].Txs[0].Msg.TxOut[0].PkScript)
	c, r := dialElectrum(t, srv, 30*time.Second)
	if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.subscribe","params":[%q]}`+"\n", sh); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"result":null`) {
		t.Fatalf("subscribing to a script no block has paid yet: %q (%v)", line, err)
	}

	backend.fail.Store(1)
	if err := path.Connect(ctx, chainBlocks[2], 2); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no notification of the status block 2 gave %s: %v", sh, err)
		}
		var n struct {
			Method string `json:"method"`
			Params []any  `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &n); err != nil {
			t.Fatal(err)
		}
		if n.Method == "blockchain.scripthash.subscribe" && len(n.Params) == 2 && n.Params[0] == sh && n.Params[1] != nil {
			break
		}
	}
	if left := backend.fail.Load(); left >= 0 {
		t.Fatalf("the status was read without the failure (%d failures left to make)", left+1)
	}
}
