package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/testdata"
)

// scriptTotals is what an address descriptor received and sent over the
// chain, computed here from the raw blocks (pay-to-pubkey outputs count
// under their key's pay-to-pubkey-hash descriptor, as the index keys them).
type scriptTotals struct{ received, sent uint64 }

func chainScriptTotals(t *testing.T, path string) map[string]*scriptTotals {
	t.Helper()
	type coin struct {
		script string
		value  uint64
	}
	utxos := map[wire.OutPoint]coin{}
	totals := map[string]*scriptTotals{}
	get := func(s string) *scriptTotals {
		if totals[s] == nil {
			totals[s] = &scriptTotals{}
		}
		return totals[s]
	}
	blocks, _ := fileBlocks(t, path)
	for _, blk := range blocks {
		for i, tx := range blk.Transactions {
			if i > 0 {
				for _, in := range tx.TxIn {
					c := utxos[in.PreviousOutPoint]
					get(c.script).sent += c.value
					delete(utxos, in.PreviousOutPoint)
				}
			}
			for vout, out := range tx.TxOut {
				s := string(index.AddrDesc(out.PkScript))
				get(s).received += uint64(out.Value)
				utxos[wire.OutPoint{Hash: tx.TxHash(), Index: uint32(vout)}] = coin{s, uint64(out.Value)}
			}
		}
	}
	return totals
}

// TestAddressIndexImportAndServe: an `import --index` killed mid-way and
// rerun leaves an index whose every address balance matches the chain; the
// daemon answers the Blockbook address and UTXO endpoints from it.
func TestAddressIndexImportAndServe(t *testing.T) {
	chainFile := testdata.Path(t, "btc-mainnet-0-14131.blk")
	data := filepath.Join(t.TempDir(), "data")
	killMidImport(t, 2, "import", "--index", "--data", data, "--sync", "block", "--progress-blocks", "2000", chainFile)
	if got := lastLine(t, "import", "--index", "--data", data, "--sync", "block", "--quiet", chainFile); got != btcChainSummary {
		t.Fatalf("import --index after a SIGKILL:\n%s", got)
	}

	totals := chainScriptTotals(t, chainFile)
	idx, err := index.Open(filepath.Join(data, "index"), index.Options{Coin: "Bitcoin"})
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	var busiest string
	for script, tot := range totals {
		bal, err := idx.Balance([]byte(script))
		if err != nil {
			idx.Close()
			t.Fatal(err)
		}
		if isDataScript(script) {
			continue // OP_RETURN outputs are not indexed under an address
		}
		if bal.Balance != tot.received-tot.sent || bal.Sent != tot.sent {
			idx.Close()
			t.Fatalf("script %x: index balance %d sent %d, chain says %d and %d", script, bal.Balance, bal.Sent, tot.received-tot.sent, tot.sent)
		}
		sum += bal.Balance
		if busiest == "" || tot.sent > totals[busiest].sent {
			busiest = script
		}
	}
	idx.Close()
	if sum != 70_660_000_000_000 {
		t.Fatalf("balances sum to %d, the UTXO set holds 70,660,000,000,000", sum)
	}

	d := startDaemon(t, "serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	base := "http://" + d.http
	var addr addressReply
	getJSON(t, base+"/api/v2/address/"+hex.EncodeToString([]byte(busiest))+"?pageSize=1", &addr)
	want := totals[busiest]
	if addr.Balance != strconv.FormatUint(want.received-want.sent, 10) || addr.TotalSent != strconv.FormatUint(want.sent, 10) ||
		addr.TotalReceived != strconv.FormatUint(want.received, 10) || len(addr.Txids) != 1 || addr.TotalPages != addr.Txs {
		t.Fatalf("address %x: %+v, want received %d sent %d", busiest, addr, want.received, want.sent)
	}
	genesis := "4104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac"
	var utxos []struct {
		Txid          string `json:"txid"`
		Value         string `json:"value"`
		Confirmations int    `json:"confirmations"`
	}
	getJSON(t, base+"/api/v2/utxo/"+genesis, &utxos)
	if len(utxos) != 1 || utxos[0].Txid != "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b" || utxos[0].Value != "5000000000" || utxos[0].Confirmations != 14132 {
		t.Fatalf("genesis UTXOs: %+v", utxos)
	}
	// The genesis output pays to a public key; its address finds it.
	getJSON(t, base+"/api/v2/address/1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", &addr)
	if addr.Balance != "5000000000" || addr.Txs != 1 {
		t.Fatalf("the genesis address: %+v", addr)
	}
	if code, body := httpGet(t, base+"/api/v2/address/not-an-address"); code != 400 {
		t.Fatalf("malformed address: %d %s", code, body)
	}
	getJSON(t, base+"/api/v2/address/1BitcoinEaterAddressDontSendf59kuE", &addr)
	if addr.Balance != "0" || addr.Txs != 0 {
		t.Fatalf("an address with no history: %+v", addr)
	}
	d.stop(t, syscall.SIGTERM)

	plain := startDaemon(t, "serve", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if code, body := httpGet(t, "http://"+plain.http+"/api/v2/address/"+genesis); code != 404 {
		t.Fatalf("address endpoint without --index: %d %s", code, body)
	}
}

type addressReply struct {
	Page          int      `json:"page"`
	TotalPages    int      `json:"totalPages"`
	Balance       string   `json:"balance"`
	TotalReceived string   `json:"totalReceived"`
	TotalSent     string   `json:"totalSent"`
	Txs           int      `json:"txs"`
	Txids         []string `json:"txids"`
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, body := httpGet(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

func isDataScript(s string) bool { return len(s) > 0 && s[0] == 0x6a }

// chainRange writes blocks [from, to) of the real chain file to a
// temporary file.
func chainRange(t *testing.T, from, to int) string {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	start, end := 0, 0
	for i := 0; i < to; i++ {
		if i == from {
			start = end
		}
		end += 8 + int(binary.LittleEndian.Uint32(data[end+4:]))
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("blocks-%d-%d.blk", from, to))
	if err := os.WriteFile(path, data[start:end], 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeIndexesTheBlocksItsIndexLacks serves a store whose address
// index lacks its blocks (turned on after an import without it): the
// daemon says so and what to run, refuses new blocks until the index is
// level, and an `import --server` of the files indexes the store's blocks
// and then goes on with new ones.
func TestServeIndexesTheBlocksItsIndexLacks(t *testing.T) {
	chainFile := chainPrefix(t, 400)
	want := lastLine(t, "import", "--engine", "memory", "--quiet", chainFile)
	data := filepath.Join(t.TempDir(), "data")
	lastLine(t, "import", "--data", data, "--quiet", chainPrefix(t, 300))

	d := startDaemon(t, "serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	mustContain(t, "the daemon's start", d.log(), "the block store and the address index lack the store's blocks from height 0 on", "utxostore import --server")
	_, stderr, err := run(t, "import", "--server", d.grpc, "--start-height", "300", "--quiet", chainRange(t, 300, 400))
	if err == nil {
		t.Fatal("a new block was taken while the index lacks the store's blocks")
	}
	mustContain(t, "a new block while the index is behind", stderr, "FailedPrecondition", "the block store and the address index lack the store's blocks from height 0 on", "refused until those are sent")
	if _, stderr, err := run(t, "import", "--server", d.grpc, "--quiet", chainFile); err != nil {
		t.Fatalf("import --server: %v\n%s", err, stderr)
	}
	d.stop(t, syscall.SIGTERM)
	if got := lastLine(t, "info", "--data", data); got != want {
		t.Fatalf("after the import:\n%s\nwant\n%s", got, want)
	}
	checkIndexHoldsChain(t, filepath.Join(data, "index"), chainFile, want)
}

// TestImportRefusesFilesThatSkipWhatTheIndexLacks: an `import --index`
// whose files start after the blocks its index lacks is refused before it
// changes anything, saying what to import.
func TestImportRefusesFilesThatSkipWhatTheIndexLacks(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	before := lastLine(t, "import", "--data", data, "--quiet", chainPrefix(t, 300))
	_, stderr, err := run(t, "import", "--index", "--data", data, "--start-height", "300", "--quiet", chainRange(t, 300, 400))
	if err == nil {
		t.Fatal("an import that skips the index's missing blocks succeeded")
	}
	mustContain(t, "the refused import", stderr, "the block store and the address index lack the store's blocks from height 0 on", "--start-height 0 or lower")
	if got := lastLine(t, "info", "--data", data); got != before {
		t.Fatalf("the refused import changed the store:\n%s\nwas\n%s", got, before)
	}
}

// TestImportIndexCache: --index-cache sizes the address index's block
// cache; an import with a small one builds the index the default builds,
// and a negative one is refused before anything is created.
func TestImportIndexCache(t *testing.T) {
	file := chainPrefix(t, 300)
	data := filepath.Join(t.TempDir(), "data")
	_, stderr, err := run(t, "import", "--index", "--index-cache", "-1", "--data", data, "--quiet", file)
	if err == nil {
		t.Fatal("an import with --index-cache -1 succeeded")
	}
	mustContain(t, "the refused import", stderr, "--index-cache is -1 bytes; it cannot be negative")
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused import left the data directory: %v", err)
	}
	digests := map[string]string{}
	for _, cache := range []string{"1048576", strconv.Itoa(index.DefaultCacheSize)} {
		data := filepath.Join(t.TempDir(), "data")
		if _, stderr, err := run(t, "import", "--index", "--index-cache", cache, "--data", data, "--quiet", file); err != nil {
			t.Fatalf("import --index-cache %s: %v\n%s", cache, err, stderr)
		}
		digests[cache] = indexDigest(t, data)
	}
	if len(digests) != 2 || digests["1048576"] != digests[strconv.Itoa(index.DefaultCacheSize)] {
		t.Fatalf("indexes built with a 1 MiB cache and the default differ: %v", digests)
	}
}

// indexDigest is the digest of every entry of the address index in the
// data directory data (index.Footprint).
func indexDigest(t *testing.T, data string) string {
	t.Helper()
	idx, err := index.Open(filepath.Join(data, "index"), index.Options{Coin: "Bitcoin"})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	fp, err := idx.Footprint()
	if err != nil {
		t.Fatal(err)
	}
	return fp.Digest
}

// TestImportIndexInTwoRuns: an `import --index` of the chain's second half
// into the index of its first (the next block files, as a user imports
// them) builds, byte for byte, the index one import of the whole chain
// builds. The second import starts from the balances and pay-to-pubkey
// marks the first wrote (index.Bulk), saying so on stderr, and many
// inputs of these blocks spend a pay-to-pubkey coinbase output.
func TestImportIndexInTwoRuns(t *testing.T) {
	const split, end = 2000, 4000
	whole := filepath.Join(t.TempDir(), "data")
	want := lastLine(t, "import", "--index", "--data", whole, "--quiet", chainPrefix(t, end))
	parts := filepath.Join(t.TempDir(), "data")
	_, stderr, err := run(t, "import", "--index", "--data", parts, "--quiet", chainPrefix(t, split))
	if err != nil || strings.Contains(stderr, "the address index has blocks") {
		t.Fatalf("the first import (%v) read an index with blocks:\n%s", err, stderr)
	}
	stdout, stderr, err := run(t, "import", "--index", "--data", parts, "--start-height", strconv.Itoa(split), "--quiet", chainRange(t, split, end))
	if err != nil {
		t.Fatalf("the second import: %v\n%s", err, stderr)
	}
	// It says why it pauses before its first block, and what it read.
	mustContain(t, "the second import's log", stderr, "the address index has blocks: reading its addresses and pay-to-pubkey outputs")
	if !regexp.MustCompile(`the address index's import starts" addresses=[1-9][0-9]* p2pk_outputs=[1-9][0-9]* seconds=`).MatchString(stderr) {
		t.Fatalf("the second import does not say what it read from the index:\n%s", stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if got := lines[len(lines)-1]; got != want {
		t.Fatalf("the store after two imports:\n%s\nwant\n%s", got, want)
	}
	if got, want := indexDigest(t, parts), indexDigest(t, whole); got != want {
		t.Fatalf("the index after two imports has digest %s, after one %s", got, want)
	}
	// The digest covers Blockbook's columns; the Electrum columns' marks
	// of the inputs that spend a pay-to-pubkey output are compared here.
	marks := func(data string) []bool {
		idx, err := index.Open(filepath.Join(data, "index"), index.Options{Coin: "Bitcoin"})
		if err != nil {
			t.Fatal(err)
		}
		defer idx.Close()
		var out []bool
		blocks, _ := fileBlocks(t, chainRange(t, split, end))
		for _, blk := range blocks {
			for _, tx := range blk.Transactions[1:] {
				for i := range tx.TxIn {
					p2pk, err := idx.PaysP2PK(tx.TxHash(), uint32(i), true)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, p2pk)
				}
			}
		}
		return out
	}
	gotMarks, wantMarks := fmt.Sprint(marks(parts)), fmt.Sprint(marks(whole))
	if gotMarks != wantMarks {
		t.Fatalf("the second import's inputs are marked as spending pay-to-pubkey outputs\n%s\nafter two imports, and\n%s\nafter one", gotMarks, wantMarks)
	}
	if !strings.Contains(wantMarks, "true") {
		t.Fatal("no input of the second import spends a pay-to-pubkey output: the test checks nothing")
	}
}
