package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/index"
)

// TestImportThroughADaemonSurvivesSIGKILL kills the daemon with SIGKILL
// while `import --server` feeds it blocks, restarts it and reruns the
// import to its end, again and again: pebble and sozu, --sync always and
// block, with the address index and the block store (twenty kills each)
// and without them (three). Each kill comes after the import has had a
// few more blocks acknowledged, so it lands anywhere in a block's path.
// Every rerun must end with the summary of a direct import of the same
// blocks and, on /api/status, the store, the index and the block store at
// that tip; at the end the index holds the chain's balances.
func TestImportThroughADaemonSurvivesSIGKILL(t *testing.T) {
	const step = 100 // blocks each round adds to the file: far more than a kill waits for
	indexedKills, plainKills := 20, 3
	if *long {
		indexedKills, plainKills = 50, 10
	}
	files := make([]string, indexedKills)
	wants := make([]string, indexedKills)
	for i := range files {
		files[i] = chainPrefix(t, 2*step+i*step)
		wants[i] = lastLine(t, "import", "--engine", "memory", "--quiet", files[i])
	}
	type setup struct {
		engine, sync string
		index        bool
	}
	var setups []setup
	for _, engine := range []string{"pebble", "sozu"} {
		for _, sync := range []string{"always", "block"} {
			for _, index := range []bool{true, false} {
				setups = append(setups, setup{engine, sync, index})
			}
		}
	}
	for _, s := range setups {
		name := s.engine + "/" + s.sync
		kills := plainKills
		if s.index {
			name += "/index"
			kills = indexedKills
		}
		t.Run(name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			store := []string{"--engine", s.engine, "--data", data}
			serve := append([]string{"serve", "--create", "--sync", s.sync, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, store...)
			if s.index {
				serve = append(serve, "--index")
			}
			for i := range kills {
				killDaemonMidImport(t, startDaemon(t, serve...), 1+i%3, files[i])
				d := startDaemon(t, serve...)
				stdout, stderr, err := run(t, "import", "--server", d.grpc, "--quiet", files[i])
				if err != nil {
					t.Fatalf("the import after SIGKILL %d of the daemon: %v\n%s\ndaemon:\n%s", i+1, err, stderr, d.log())
				}
				if got := finalLine(stdout); got != wants[i] {
					t.Fatalf("after SIGKILL %d of the daemon, the rerun ends with:\n%s\nwant\n%s", i+1, got, wants[i])
				}
				checkLevel(t, d, s.index)
				if err := d.stop(t, syscall.SIGTERM); err != nil {
					t.Fatalf("SIGTERM: %v\n%s", err, d.log())
				}
			}
			if got := lastLine(t, append([]string{"info"}, store...)...); got != wants[kills-1] {
				t.Fatalf("after %d SIGKILLs of the daemon:\n%s\nwant\n%s", kills, got, wants[kills-1])
			}
			if s.index {
				checkIndexHoldsChain(t, filepath.Join(data, "index"), files[kills-1], wants[kills-1])
			}
		})
	}
}

// checkLevel expects the daemon's /api/status to show the store, and with
// indexed the address index and the block store, at one tip, with the
// next height after it.
func checkLevel(t *testing.T, d *daemon, indexed bool) {
	t.Helper()
	type tip struct {
		Height uint32 `json:"height"`
		Hash   string `json:"hash"`
	}
	var status struct {
		Backend struct {
			BestBlockHash string `json:"bestBlockHash"`
		} `json:"backend"`
		Utxostore struct {
			Height        uint32 `json:"height"`
			IndexTip      *tip   `json:"indexTip"`
			BlockStoreTip *tip   `json:"blockStoreTip"`
			NextHeight    uint32 `json:"nextHeight"`
		} `json:"utxostore"`
	}
	getJSON(t, "http://"+d.http+"/api/status", &status)
	u := status.Utxostore
	want := tip{u.Height, status.Backend.BestBlockHash}
	if u.NextHeight != u.Height+1 {
		t.Fatalf("the daemon needs block %d next, its tip is at %d", u.NextHeight, u.Height)
	}
	if !indexed {
		return
	}
	if u.IndexTip == nil || *u.IndexTip != want || u.BlockStoreTip == nil || *u.BlockStoreTip != want {
		t.Fatalf("the store's tip is %+v, the index's %+v, the block store's %+v", want, u.IndexTip, u.BlockStoreTip)
	}
}

// checkOneTip expects the daemon's /api/status to name one block: the
// tip's height (bestHeight) and the store's block height agree.
func checkOneTip(t *testing.T, d *daemon) {
	t.Helper()
	var status struct {
		Blockbook struct {
			BestHeight uint32 `json:"bestHeight"`
		} `json:"blockbook"`
		Utxostore struct {
			Height uint32 `json:"height"`
		} `json:"utxostore"`
	}
	getJSON(t, "http://"+d.http+"/api/status", &status)
	if status.Blockbook.BestHeight != status.Utxostore.Height {
		t.Fatalf("after a restart the tip is at height %d and the store's block height is %d", status.Blockbook.BestHeight, status.Utxostore.Height)
	}
}

// killDaemonMidImport runs `import --server` against d and SIGKILLs the
// daemon once the import has reported `reports` progress lines (5 blocks
// each, acknowledged by the daemon). The import must then fail. Before
// the import, the daemon must report one tip.
func killDaemonMidImport(t *testing.T, d *daemon, reports int, chainFile string) {
	t.Helper()
	checkOneTip(t, d)
	imp, seen, stderr := startImport(t, reports, "import", "--server", d.grpc, "--progress-blocks", "5", chainFile)
	if len(seen) < reports {
		imp.Wait()
		t.Fatalf("the import ended after %d progress lines, before the daemon could be killed:\n%s", len(seen), d.log())
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	if ws, ok := d.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the daemon ended by itself, not by the SIGKILL:\n%s", d.log())
	}
	io.Copy(io.Discard, stderr)
	if err := imp.Wait(); err == nil {
		t.Fatalf("the import finished although the daemon was killed after %s", seen[len(seen)-1])
	}
}

// checkIndexHoldsChain opens the address index at dir and expects its tip
// to be the chain file's last block, and the balance of every output
// script to be what the chain's blocks give it.
func checkIndexHoldsChain(t *testing.T, dir, chainFile, summary string) {
	t.Helper()
	var sum struct {
		Height   uint32 `json:"height"`
		Satoshis uint64 `json:"satoshis"`
	}
	if err := json.Unmarshal([]byte(summary), &sum); err != nil {
		t.Fatal(err)
	}
	idx, err := index.Open(dir, index.Options{Coin: "Bitcoin"})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	best, ok, err := idx.BestBlock()
	if err != nil || !ok {
		t.Fatalf("the index has no tip (%v)", err)
	}
	if last := lastBlockHash(t, chainFile); best.Height != sum.Height || best.Hash != last {
		t.Fatalf("the index's tip is %s at height %d; the store's is %s at height %d", best.Hash, best.Height, last, sum.Height)
	}
	var total uint64
	for script, tot := range chainScriptTotals(t, chainFile) {
		if isDataScript(script) {
			continue
		}
		bal, err := idx.Balance([]byte(script))
		if err != nil {
			t.Fatal(err)
		}
		if bal.Balance != tot.received-tot.sent || bal.Sent != tot.sent {
			t.Fatalf("script %x: index balance %d sent %d, the chain says %d and %d", script, bal.Balance, bal.Sent, tot.received-tot.sent, tot.sent)
		}
		total += bal.Balance
	}
	if total != sum.Satoshis {
		t.Fatalf("the index's balances sum to %d, the store's UTXO set to %d", total, sum.Satoshis)
	}
}

// TestDaemonKilledAfterADeleteOfATipTransactionGoesOn: a client deletes,
// through a daemon under --sync always, the coinbase of the block it just
// connected, whose set statistics are still to be worked out from the
// block's transactions. The daemon is killed with SIGKILL and started
// again, and takes the rest of the chain. It used to refuse every block
// after the restart: working the pending block out needed the deleted
// transaction.
func TestDaemonKilledAfterADeleteOfATipTransactionGoesOn(t *testing.T) {
	first, rest := chainPrefix(t, 200), chainPrefix(t, 300)
	data := filepath.Join(t.TempDir(), "data")
	serve := []string{"serve", "--create", "--sync", "always", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}
	d := startDaemon(t, serve...)
	if _, stderr, err := run(t, "import", "--server", d.grpc, "--quiet", first); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	tip := lastBlockOf(t, first)
	c, err := client.Dial(d.grpc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Delete(context.Background(), tip.Transactions[0].TxHash())
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.exited

	d = startDaemon(t, serve...)
	if _, stderr, err := run(t, "import", "--server", d.grpc, "--quiet", rest); err != nil {
		t.Fatalf("the import after the restart: %v\n%s\ndaemon:\n%s", err, stderr, d.log())
	}
	checkLevel(t, d, false)
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, d.log())
	}
}
