package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// electrumClient speaks the Electrum protocol: one JSON-RPC request a
// line over TCP.
type electrumClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	id   int
	// notes are the notifications read while waiting for an answer, for
	// the next reads.
	notes []electrumAnswer
}

func dialElectrum(t *testing.T, addr string) *electrumClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &electrumClient{t: t, conn: conn, r: bufio.NewReaderSize(conn, 1<<20)}
}

type electrumAnswer struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call sends a request and returns its answer, keeping the notifications
// that come first for later reads.
func (c *electrumClient) call(method string, params ...any) electrumAnswer {
	c.t.Helper()
	c.id++
	if params == nil {
		params = []any{}
	}
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.send(append(req, '\n')); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	for {
		a, err := c.readLine()
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		if a.Method == "" && a.ID == c.id {
			return a
		}
		if a.Method != "" {
			c.notes = append(c.notes, a)
		}
	}
}

func (c *electrumClient) send(b []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err := c.conn.Write(b)
	return err
}

// read returns the next message: a notification kept by call, or the
// next line.
func (c *electrumClient) read() (electrumAnswer, error) {
	if len(c.notes) > 0 {
		n := c.notes[0]
		c.notes = c.notes[1:]
		return n, nil
	}
	return c.readLine()
}

func (c *electrumClient) readLine() (electrumAnswer, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return electrumAnswer{}, err
	}
	var a electrumAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		return a, fmt.Errorf("%v: %.300s", err, line)
	}
	return a, nil
}

// result decodes a successful answer into v.
func (c *electrumClient) result(v any, method string, params ...any) {
	c.t.Helper()
	a := c.call(method, params...)
	if a.Error != nil {
		c.t.Fatalf("%s %v: error %d %s", method, params, a.Error.Code, a.Error.Message)
	}
	if err := json.Unmarshal(a.Result, v); err != nil {
		c.t.Fatalf("%s %v: %v: %s", method, params, err, a.Result)
	}
}

// scriptHash is the Electrum protocol's name of an output script.
func scriptHash(script []byte) string {
	h := sha256.Sum256(script)
	for i, j := 0, 31; i < j; i, j = i+1, j-1 {
		h[i], h[j] = h[j], h[i]
	}
	return hex.EncodeToString(h[:])
}

// fileBlocks reads a raw block file: each block and its serialisation.
func fileBlocks(t *testing.T, path string) ([]*wire.MsgBlock, [][]byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []*wire.MsgBlock
	var raws [][]byte
	for len(data) >= 8 && binary.LittleEndian.Uint32(data) != 0 {
		n := binary.LittleEndian.Uint32(data[4:])
		var b wire.MsgBlock
		if err := b.Deserialize(bytes.NewReader(data[8 : 8+n])); err != nil {
			t.Fatal(err)
		}
		blocks, raws = append(blocks, &b), append(raws, data[8:8+n])
		data = data[8+n:]
	}
	return blocks, raws
}

// foldBranch climbs from leaf at pos through branch (hashes as the
// protocol prints them) to the root, as a wallet checks a proof.
func foldBranch(t *testing.T, leaf chainhash.Hash, pos int, branch []string) chainhash.Hash {
	t.Helper()
	h := leaf
	for _, s := range branch {
		sib, err := chainhash.NewHashFromStr(s)
		if err != nil {
			t.Fatal(err)
		}
		var pair []byte
		if pos&1 == 0 {
			pair = append(append(pair, h[:]...), sib[:]...)
		} else {
			pair = append(append(pair, sib[:]...), h[:]...)
		}
		h = chainhash.DoubleHashH(pair)
		pos >>= 1
	}
	return h
}

// TestElectrumMainnet serves the first 3,000 real mainnet blocks over the
// Electrum protocol: the genesis coinbase's pay-to-pubkey script holds
// its 50 BTC under its own script hash; the keys these blocks pay both by
// a pay-to-pubkey and by a pay-to-pubkey-hash script (which Blockbook's
// index files under one address) have each script's own history and
// balance, computed here from the file; every
// header is the file's, checkpoint proofs and every transaction's merkle
// proof verify against the file's headers and merkle roots, computed here
// from the file; estimatefee answers without a node, Blockbook's and
// Electrum's alike; and `config` shows the Electrum limits.
func TestElectrumMainnet(t *testing.T) {
	const blocksN = 3000
	file := chainPrefix(t, blocksN)
	blocks, raws := fileBlocks(t, file)
	data := t.TempDir()
	if _, stderr, err := run(t, "import", "--index", "--quiet", "--sync", "block", "--data", data, file); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	d := startDaemon(t, "serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--electrum", "127.0.0.1:0")
	c := dialElectrum(t, electrumAddrOf(t, d))

	var version []string
	c.result(&version, "server.version", "test", []string{"1.4", "1.5"})
	if len(version) != 2 || version[1] != "1.5" {
		t.Fatalf("server.version: %v", version)
	}
	var features struct {
		Genesis string `json:"genesis_hash"`
	}
	c.result(&features, "server.features")
	if features.Genesis != blocks[0].BlockHash().String() {
		t.Errorf("server.features names genesis %s", features.Genesis)
	}

	genesisScript := blocks[0].Transactions[0].TxOut[0].PkScript
	var balance struct{ Confirmed, Unconfirmed int64 }
	c.result(&balance, "blockchain.scripthash.get_balance", scriptHash(genesisScript))
	if balance.Confirmed != 5_000_000_000 || balance.Unconfirmed != 0 {
		t.Errorf("the genesis coinbase's P2PK script: %+v, want 5,000,000,000 confirmed", balance)
	}
	key := genesisScript[1 : len(genesisScript)-1]
	p2pkh := append(append([]byte{0x76, 0xa9, 0x14}, btcutil.Hash160(key)...), 0x88, 0xac)
	c.result(&balance, "blockchain.scripthash.get_balance", scriptHash(p2pkh))
	if balance.Confirmed != 0 {
		t.Errorf("the P2PKH script of the genesis key: %+v, want nothing (no output pays it)", balance)
	}
	var history []struct {
		TxHash string `json:"tx_hash"`
		Height int64  `json:"height"`
	}
	c.result(&history, "blockchain.scripthash.get_history", scriptHash(genesisScript))
	if len(history) != 1 || history[0].TxHash != blocks[0].Transactions[0].TxHash().String() || history[0].Height != 0 {
		t.Errorf("the genesis script's history: %+v", history)
	}

	shared := sharedKeyScripts(blocks)
	if len(shared) < 2 {
		t.Fatalf("the blocks pay %d keys both ways", len(shared)/2)
	}
	want := scriptsByHand(blocks)
	for _, sc := range shared {
		c.result(&balance, "blockchain.scripthash.get_balance", scriptHash(sc))
		if balance.Confirmed != want[string(sc)].unspent {
			t.Errorf("script %x: balance %+v, the file gives %d", sc, balance, want[string(sc)].unspent)
		}
		c.result(&history, "blockchain.scripthash.get_history", scriptHash(sc))
		got := map[string]int64{}
		for _, e := range history {
			got[e.TxHash] = e.Height
		}
		if fmt.Sprint(got) != fmt.Sprint(want[string(sc)].txs) {
			t.Errorf("script %x: history %v, the file gives %v", sc, got, want[string(sc)].txs)
		}
	}

	// Protocol 1.5's history by height range: below height 1 is the
	// genesis block alone.
	c.result(&history, "blockchain.scripthash.get_history", scriptHash(genesisScript), 0, 1)
	if len(history) != 1 || history[0].Height != 0 {
		t.Errorf("the genesis script's history below height 1: %+v", history)
	}
	c.result(&history, "blockchain.scripthash.get_history", scriptHash(genesisScript), 1, -1)
	if len(history) != 0 {
		t.Errorf("the genesis script's history from height 1: %+v", history)
	}

	var tip struct {
		Hex    string `json:"hex"`
		Height int    `json:"height"`
	}
	c.result(&tip, "blockchain.headers.subscribe")
	if tip.Height != blocksN-1 || tip.Hex != hex.EncodeToString(raws[blocksN-1][:80]) {
		t.Errorf("headers.subscribe: %+v", tip)
	}
	var chunk struct {
		Count  int      `json:"count"`
		Hex    string   `json:"hex"`
		Max    int      `json:"max"`
		Root   string   `json:"root"`
		Branch []string `json:"branch"`
	}
	// A chunk of headers with the proof that its last is under the
	// checkpoint at cp, whose root is computed here from the file.
	const cp = 1500
	c.result(&chunk, "blockchain.block.headers", 1000, 100, cp)
	var wantHex strings.Builder
	for h := 1000; h < 1100; h++ {
		wantHex.WriteString(hex.EncodeToString(raws[h][:80]))
	}
	if chunk.Count != 100 || chunk.Hex != wantHex.String() || chunk.Max != 2016 {
		t.Errorf("block.headers 1000+100: count %d max %d, hex as the file: %v", chunk.Count, chunk.Max, chunk.Hex == wantHex.String())
	}
	var leaves []chainhash.Hash
	for _, b := range blocks[:cp+1] {
		leaves = append(leaves, b.BlockHash())
	}
	root := merkleRootOf(leaves)
	if chunk.Root != root.String() || foldBranch(t, leaves[1099], 1099, chunk.Branch) != root {
		t.Errorf("block.headers' checkpoint proof does not lead to the root of the hashes 0..%d", cp)
	}

	// Every transaction of the blocks holding more than the coinbase:
	// its bytes are the file's and its merkle proof leads to the root in
	// the file's header.
	proved := 0
	for height, b := range blocks {
		if len(b.Transactions) < 2 {
			continue
		}
		for pos, tx := range b.Transactions {
			var proof struct {
				Height int      `json:"block_height"`
				Merkle []string `json:"merkle"`
				Pos    int      `json:"pos"`
			}
			c.result(&proof, "blockchain.transaction.get_merkle", tx.TxHash().String(), height)
			if proof.Pos != pos || proof.Height != height || foldBranch(t, tx.TxHash(), pos, proof.Merkle) != b.Header.MerkleRoot {
				t.Fatalf("block %d tx %d %s: the merkle proof %+v does not lead to the header's root", height, pos, tx.TxHash(), proof)
			}
			var raw string
			c.result(&raw, "blockchain.transaction.get", tx.TxHash().String())
			var buf bytes.Buffer
			if err := tx.Serialize(&buf); err != nil {
				t.Fatal(err)
			}
			if raw != hex.EncodeToString(buf.Bytes()) {
				t.Fatalf("transaction.get %s is not the file's", tx.TxHash())
			}
			proved++
		}
	}
	if proved < 2 {
		t.Fatalf("only %d transactions proved", proved)
	}
	first := blocks[170].Transactions[1]
	var verbose struct {
		TxID          string `json:"txid"`
		BlockHash     string `json:"blockhash"`
		Confirmations int    `json:"confirmations"`
	}
	c.result(&verbose, "blockchain.transaction.get", first.TxHash().String(), true)
	if verbose.TxID != first.TxHash().String() || verbose.BlockHash != blocks[170].BlockHash().String() || verbose.Confirmations != blocksN-170 {
		t.Errorf("verbose transaction.get: %+v", verbose)
	}
	var byPos struct {
		TxHash string   `json:"tx_hash"`
		Merkle []string `json:"merkle"`
	}
	c.result(&byPos, "blockchain.transaction.id_from_pos", 170, 1, true)
	if byPos.TxHash != first.TxHash().String() || foldBranch(t, first.TxHash(), 1, byPos.Merkle) != blocks[170].Header.MerkleRoot {
		t.Errorf("id_from_pos 170 1: %+v", byPos)
	}
	a := c.call("blockchain.transaction.id_from_pos", 170, 2)
	if a.Error == nil {
		t.Errorf("id_from_pos past the block's transactions: %s", a.Result)
	}

	// estimatefee without a node: Blockbook's (BTC/kB) and Electrum's
	// come from one estimate.
	var fee struct{ Result string }
	code, body := httpGet(t, "http://"+d.http+"/api/v2/estimatefee/2")
	if err := json.Unmarshal([]byte(body), &fee); code != 200 || err != nil {
		t.Fatalf("estimatefee/2 without a node: %d %s", code, body)
	}
	var rate float64
	c.result(&rate, "blockchain.estimatefee", 2)
	if fmt.Sprintf("%.8f", rate) != fee.Result || rate < 0.00001 {
		t.Errorf("blockchain.estimatefee %v, Blockbook's %s", rate, fee.Result)
	}

	_, metrics := httpGet(t, "http://"+d.http+"/metrics")
	mustContain(t, "the metrics", metrics, "utxostore_electrum_connections 1",
		`utxostore_electrum_requests_total{method="blockchain.transaction.get_merkle",outcome="ok"} `+fmt.Sprint(proved),
		`utxostore_electrum_requests_total{method="blockchain.transaction.id_from_pos",outcome="error"} 1`)

	out, stderr, err := run(t, "config", "--electrum", "127.0.0.1:50001")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, stderr)
	}
	mustContain(t, "config", out, "electrum ", "electrum-max-subs ", "electrum-max-subs-total", "electrum-max-history", "electrum-max-request", "electrum-idle-timeout")
	t.Logf("%d transactions' merkle proofs verified", proved)
}

// merkleRootOf is Bitcoin's merkle root of leaves, computed level by
// level (the last of an odd level paired with itself).
func merkleRootOf(level []chainhash.Hash) chainhash.Hash {
	for len(level) > 1 {
		var next []chainhash.Hash
		for i := 0; i < len(level); i += 2 {
			j := min(i+1, len(level)-1)
			next = append(next, chainhash.DoubleHashH(append(append([]byte{}, level[i][:]...), level[j][:]...)))
		}
		level = next
	}
	return level[0]
}

// scriptTally is what the blocks give one output script: the
// transactions that pay or spend it, by txid with their height, and its
// unspent value.
type scriptTally struct {
	txs     map[string]int64
	unspent int64
}

// scriptsByHand tallies every output script of the blocks.
func scriptsByHand(blocks []*wire.MsgBlock) map[string]*scriptTally {
	type coin struct {
		script string
		value  int64
	}
	utxos := map[wire.OutPoint]coin{}
	tally := map[string]*scriptTally{}
	touch := func(script string, txid string, height int) {
		if tally[script] == nil {
			tally[script] = &scriptTally{txs: map[string]int64{}}
		}
		tally[script].txs[txid] = int64(height)
	}
	for height, b := range blocks {
		for i, tx := range b.Transactions {
			id := tx.TxHash()
			if i > 0 {
				for _, in := range tx.TxIn {
					c := utxos[in.PreviousOutPoint]
					touch(c.script, id.String(), height)
					delete(utxos, in.PreviousOutPoint)
				}
			}
			for vout, o := range tx.TxOut {
				touch(string(o.PkScript), id.String(), height)
				utxos[wire.OutPoint{Hash: id, Index: uint32(vout)}] = coin{string(o.PkScript), o.Value}
			}
		}
	}
	for _, c := range utxos {
		tally[c.script].unspent += c.value
	}
	return tally
}

// sharedKeyScripts are the pay-to-pubkey and pay-to-pubkey-hash scripts
// of the keys the blocks pay both ways.
func sharedKeyScripts(blocks []*wire.MsgBlock) [][]byte {
	p2pk := map[string][]byte{}
	p2pkh := map[string][]byte{}
	for _, b := range blocks {
		for _, tx := range b.Transactions {
			for _, o := range tx.TxOut {
				s := o.PkScript
				switch {
				case (len(s) == 67 && s[0] == 65 || len(s) == 35 && s[0] == 33) && s[len(s)-1] == 0xac:
					p2pk[string(btcutil.Hash160(s[1:len(s)-1]))] = s
				case len(s) == 25 && s[0] == 0x76 && s[1] == 0xa9 && s[2] == 20 && s[23] == 0x88 && s[24] == 0xac:
					p2pkh[string(s[3:23])] = s
				}
			}
		}
	}
	var out [][]byte
	for h, s := range p2pkh {
		if k, ok := p2pk[h]; ok {
			out = append(out, k, s)
		}
	}
	return out
}

// blockHashOfHeader is the hash of an 80-byte header, as it is printed.
func blockHashOfHeader(header []byte) string { return chainhash.DoubleHashH(header).String() }
