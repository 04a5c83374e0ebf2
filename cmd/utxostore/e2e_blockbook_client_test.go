package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/internal/testdata"
)

// blockbookClientDir is where scripts/test.sh installs blockbook-client
// (npm, 0.7.8), relative to the module root.
const blockbookClientDir = ".cache/blockbook-client/node_modules"

// mainnetFrames splits the mainnet file into its blk*.dat frames.
func mainnetFrames(t *testing.T) ([][]byte, []*wire.MsgBlock) {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	var blocks []*wire.MsgBlock
	for len(data) >= 8 && binary.LittleEndian.Uint32(data) != 0 {
		n := binary.LittleEndian.Uint32(data[4:])
		var mb wire.MsgBlock
		if err := mb.Deserialize(bytes.NewReader(data[8 : 8+n])); err != nil {
			t.Fatal(err)
		}
		frames, blocks = append(frames, data[:8+n]), append(blocks, &mb)
		data = data[8+n:]
	}
	return frames, blocks
}

// scriptAddress is the address bitcoind shows for an output script (a
// pay-to-pubkey script shows its key's P2PKH address); "" for none.
func scriptAddress(script []byte) string {
	_, addrs, _, err := txscript.ExtractPkScriptAddrs(script, &chaincfg.MainNetParams)
	if err != nil || len(addrs) == 0 {
		return ""
	}
	return addrs[0].EncodeAddress()
}

// chainFacts is what the Node client must see, computed here from the raw
// blocks up to height tip.
type chainFacts struct {
	TipHeight      uint32   `json:"tipHeight"`
	TipHash        string   `json:"tipHash"`
	GenesisHash    string   `json:"genesisHash"`
	GenesisAddress string   `json:"genesisAddress"`
	GenesisBalance string   `json:"genesisBalance"`
	GenesisTxids   []string `json:"genesisTxids"`
	Block170       struct {
		Hash  string   `json:"hash"`
		Txids []string `json:"txids"`
	} `json:"block170"`
	Tx struct {
		Txid          string   `json:"txid"`
		Value         string   `json:"value"`
		ValueIn       string   `json:"valueIn"`
		Fees          string   `json:"fees"`
		VinTxid       string   `json:"vinTxid"`
		VinAddress    string   `json:"vinAddress"`
		VoutAddresses []string `json:"voutAddresses"`
		// Who spends output 1, and where.
		SpentTxID   string `json:"spentTxId"`
		SpentIndex  int    `json:"spentIndex"`
		SpentHeight uint32 `json:"spentHeight"`
	} `json:"tx"`
	// FullySpent is the coinbase f4184f… spends: every output spent, so
	// the store deleted its record; the block store still serves it.
	FullySpent string `json:"fullySpent"`
	Spender    struct {
		Address string `json:"address"`
		Balance string `json:"balance"`
		Txs     int    `json:"txs"`
	} `json:"spender"`
	Xpub             string   `json:"xpub"`
	XpubFirstAddress string   `json:"xpubFirstAddress"`
	NewHeights       []uint32 `json:"newHeights"`
	LastHeight       uint32   `json:"lastHeight"`
	LastHash         string   `json:"lastHash"`
	NewBlockAddress  string   `json:"newBlockAddress"`
	NewBlockTxid     string   `json:"newBlockTxid"`
}

func computeChainFacts(t *testing.T, blocks []*wire.MsgBlock, tip uint32) chainFacts {
	t.Helper()
	var f chainFacts
	f.TipHeight, f.TipHash = tip, blocks[tip].BlockHash().String()
	f.GenesisHash = blocks[0].BlockHash().String()
	f.GenesisAddress, f.Spender.Address = "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "12cbQLTFMXRnSzktFkuoG3eHoMeFtpTu3S"

	type coin struct {
		addr  string
		value int64
	}
	utxos := map[wire.OutPoint]coin{}
	touches := map[string][]string{} // address -> txids, oldest first
	touch := func(addr, txid string) {
		if l := touches[addr]; len(l) == 0 || l[len(l)-1] != txid {
			touches[addr] = append(l, txid)
		}
	}
	for h := uint32(0); h <= tip; h++ {
		for i, tx := range blocks[h].Transactions {
			id := tx.TxHash()
			if i > 0 {
				for _, in := range tx.TxIn {
					c := utxos[in.PreviousOutPoint]
					touch(c.addr, id.String())
					delete(utxos, in.PreviousOutPoint)
				}
			}
			for vout, out := range tx.TxOut {
				a := scriptAddress(out.PkScript)
				touch(a, id.String())
				utxos[wire.OutPoint{Hash: id, Index: uint32(vout)}] = coin{a, out.Value}
			}
		}
	}
	balance := func(addr string) string {
		var sum int64
		for _, c := range utxos {
			if c.addr == addr {
				sum += c.value
			}
		}
		return strconv.FormatInt(sum, 10)
	}
	f.GenesisBalance = balance(f.GenesisAddress)
	for i := len(touches[f.GenesisAddress]) - 1; i >= 0; i-- {
		f.GenesisTxids = append(f.GenesisTxids, touches[f.GenesisAddress][i])
	}
	f.Spender.Balance, f.Spender.Txs = balance(f.Spender.Address), len(touches[f.Spender.Address])

	b170 := blocks[170]
	f.Block170.Hash = b170.BlockHash().String()
	for _, tx := range b170.Transactions {
		f.Block170.Txids = append(f.Block170.Txids, tx.TxHash().String())
	}
	tx := b170.Transactions[1]
	f.Tx.Txid = tx.TxHash().String()
	if !strings.HasPrefix(f.Tx.Txid, "f4184fc5") {
		t.Fatalf("block 170's second tx is %s", f.Tx.Txid)
	}
	prev := tx.TxIn[0].PreviousOutPoint
	var valueIn, value int64
	for h := uint32(0); h < 170; h++ {
		for _, ptx := range blocks[h].Transactions {
			if ptx.TxHash() == prev.Hash {
				valueIn = ptx.TxOut[prev.Index].Value
				f.Tx.VinAddress = scriptAddress(ptx.TxOut[prev.Index].PkScript)
			}
		}
	}
	for _, o := range tx.TxOut {
		value += o.Value
		f.Tx.VoutAddresses = append(f.Tx.VoutAddresses, scriptAddress(o.PkScript))
	}
	f.Tx.VinTxid, f.Tx.Value, f.Tx.ValueIn = prev.Hash.String(), strconv.FormatInt(value, 10), strconv.FormatInt(valueIn, 10)
	f.Tx.Fees = strconv.FormatInt(valueIn-value, 10)
	f.FullySpent = prev.Hash.String()
	for h := uint32(171); h <= tip && f.Tx.SpentTxID == ""; h++ {
		for _, stx := range blocks[h].Transactions {
			for i, in := range stx.TxIn {
				if in.PreviousOutPoint == (wire.OutPoint{Hash: tx.TxHash(), Index: 1}) {
					f.Tx.SpentTxID, f.Tx.SpentIndex, f.Tx.SpentHeight = stx.TxHash().String(), i, h
				}
			}
		}
	}

	master, err := hdkeychain.NewMaster(bytes.Repeat([]byte{0x31}, 32), &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	account := master
	for _, i := range []uint32{44, 0, 0} {
		if account, err = account.Derive(hdkeychain.HardenedKeyStart + i); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := account.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	f.Xpub = pub.String()
	first, err := pub.Derive(0)
	if err == nil {
		first, err = first.Derive(0)
	}
	if err != nil {
		t.Fatal(err)
	}
	addr, err := first.Address(&chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	f.XpubFirstAddress = addr.EncodeAddress()

	last := uint32(len(blocks) - 1)
	for h := tip + 1; h <= last; h++ {
		f.NewHeights = append(f.NewHeights, h)
	}
	f.LastHeight, f.LastHash = last, blocks[last].BlockHash().String()
	coinbase := blocks[last].Transactions[0]
	f.NewBlockAddress, f.NewBlockTxid = scriptAddress(coinbase.TxOut[0].PkScript), coinbase.TxHash().String()
	return f
}

// TestBlockbookClient: blockbook-client, Blockbook's own TypeScript client
// with its response type validation on, reads `serve --index` on the
// imported mainnet file: status, block hashes, blocks with their
// transactions, transactions with fees and addresses, the backend's
// transaction JSON, addresses at every details level, UTXOs, an xpub, the
// balance history and the websocket API, and it sees the blocks connected
// while it listens. Every value it checks is computed here from the raw
// file.
func TestBlockbookClient(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 14,132 blocks and runs Node")
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; the blockbook-client test needs it")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, blockbookClientDir)
	if _, err := os.Stat(filepath.Join(modules, "blockbook-client")); err != nil {
		t.Skipf("blockbook-client is not installed in %s; scripts/test.sh installs it (npm install --prefix .cache/blockbook-client blockbook-client@0.7.8)", modules)
	}
	frames, blocks := mainnetFrames(t)
	const later = 5 // blocks connected while the client listens
	tip := uint32(len(blocks) - 1 - later)
	dir := t.TempDir()
	head := filepath.Join(dir, "head.blk")
	if err := os.WriteFile(head, bytes.Join(frames[:tip+1], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if _, stderr, err := run(t, "import", "--index", "--data", data, "--sync", "block", "--quiet", head); err != nil {
		t.Fatalf("import --index: %v\n%s", err, stderr)
	}
	d := startDaemon(t, "serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	facts := computeChainFacts(t, blocks, tip)
	want, err := json.Marshal(facts)
	if err != nil {
		t.Fatal(err)
	}

	client := exec.Command(nodeBin, "testdata/blockbook_client.js")
	client.Env = append(os.Environ(), "NODE_PATH="+modules, "BB_URL=http://"+d.http, "BB_WANT="+string(want))
	var stderr bytes.Buffer
	client.Stderr = &stderr
	stdout, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Process.Kill() })
	var passed []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		passed = append(passed, line)
		if line == "SUBSCRIBED" {
			// The file's remaining blocks go to the daemon now; those it
			// holds are skipped.
			full := testdata.Path(t, "btc-mainnet-0-14131.blk")
			if _, errOut, err := run(t, "import", "--server", d.grpc, "--quiet", full); err != nil {
				t.Fatalf("import --server: %v\n%s", err, errOut)
			}
		}
	}
	if err := client.Wait(); err != nil {
		t.Fatalf("blockbook-client: %v\n%s\n%s\ndaemon:\n%s", err, strings.Join(passed, "\n"), stderr.String(), d.log())
	}
	t.Logf("blockbook-client:\n%s", strings.Join(passed, "\n"))
}
