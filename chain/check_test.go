package chain_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/damage"
	"github.com/utxostore/utxostore/internal/testdata"
)

// damagedHeight is a mainnet block of six transactions: two or more, so
// a transaction that spends can be damaged, and 2 modulo 4, so repeating
// its last pair keeps the merkle root (CVE-2012-2459).
const damagedHeight = 2812

// bsvHeights are the heights of the four BSV blocks by transaction count
// (../shared/data/README.md).
var bsvHeights = map[int]uint32{901: 367495, 485: 379389, 1356: 384188, 564: 384189}

func mainnetRules(t *testing.T, trustProof bool) chain.BlockRules {
	t.Helper()
	rules, err := chain.NetworkRules("mainnet", trustProof)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// mainnetBlocks reads the blocks of the mainnet file, in chain order.
func mainnetBlocks(t testing.TB) []*chain.Block {
	t.Helper()
	f, err := os.Open(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	frames := chain.NewFrameReader(f, chain.MagicMainnet)
	var blocks []*chain.Block
	for {
		blk, err := frames.NextBlock()
		if errors.Is(err, io.EOF) {
			return blocks
		}
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, blk)
	}
}

func bsvBlocks(t *testing.T) map[uint32]*chain.Block {
	t.Helper()
	blocks := map[uint32]*chain.Block{}
	for name, raw := range testdata.BSVBlocks(t) {
		blk, err := chain.ParseBlock(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		blocks[bsvHeights[len(blk.Txs)]] = blk
	}
	if len(blocks) != 4 {
		t.Fatalf("found %d BSV blocks of the four heights the README names", len(blocks))
	}
	return blocks
}

// checkErr returns Check's error as a *chain.CheckError, failing t when it
// is nil or of another type.
func checkErr(t *testing.T, err error) *chain.CheckError {
	t.Helper()
	var ce *chain.CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *chain.CheckError, got %T %v", err, err)
	}
	return ce
}

func TestCheckPassesRealBlocks(t *testing.T) {
	rules := mainnetRules(t, false)
	blocks := mainnetBlocks(t)
	if len(blocks) != 14132 {
		t.Fatalf("read %d mainnet blocks, the README says 14,132", len(blocks))
	}
	for height, blk := range blocks {
		if err := rules.Check(blk, uint32(height)); err != nil {
			t.Fatal(err)
		}
	}
	for height, blk := range bsvBlocks(t) {
		if err := rules.Check(blk, height); err != nil {
			t.Errorf("BSV block %s: %v", blk.Hash, err)
		}
	}
}

func TestCheckRefusesEachDamagedRegion(t *testing.T) {
	raw := mainnetBlocks(t)[damagedHeight].Raw
	cases, err := damage.Flips(raw)
	if err != nil {
		t.Fatal(err)
	}
	checked, trusted := mainnetRules(t, false), mainnetRules(t, true)
	for _, c := range cases {
		blk, err := chain.ParseBlock(c.Block)
		if err != nil {
			t.Fatalf("%s: the damaged block no longer parses, so it tests the parser, not the checks: %v", c.Region, err)
		}
		ce := checkErr(t, checked.Check(blk, damagedHeight))
		if ce.Check != c.Check || !strings.Contains(ce.Reason, c.Reason) || ce.Hash != blk.Hash || ce.Height != damagedHeight {
			t.Errorf("%s: want the %s check (%q) for block %s at %d, got %v", c.Region, c.Check, c.Reason, blk.Hash, damagedHeight, ce)
		}
		// Trusting the proof skips the proof-of-work and merkle checks,
		// never the structure.
		err = trusted.Check(blk, damagedHeight)
		if skipped := c.Check == chain.CheckProofOfWork || c.Check == chain.CheckMerkleRoot; skipped != (err == nil) {
			t.Errorf("%s with the proof trusted: got %v", c.Region, err)
		}
	}
}

func TestCheckRefusesCVE20122459(t *testing.T) {
	raw := mainnetBlocks(t)[damagedHeight].Raw
	c, err := damage.RepeatTrailingPair(raw)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := chain.ParseBlock(c.Block)
	if err != nil {
		t.Fatal(err)
	}
	// btcd's merkle code, which has no mutation check, agrees the root is
	// unchanged: this is the mutation, not a plain mismatch.
	txs := make([]*btcutil.Tx, len(blk.Txs))
	for i, tx := range blk.Txs {
		txs[i] = btcutil.NewTx(tx.Msg)
	}
	if root := blockchain.CalcMerkleRoot(txs, false); root != blk.Header.MerkleRoot || len(txs) != 8 {
		t.Fatalf("the mutated list of %d transactions hashes to %s, the header says %s", len(txs), root, blk.Header.MerkleRoot)
	}
	ce := checkErr(t, mainnetRules(t, false).Check(blk, damagedHeight))
	if ce.Check != chain.CheckMerkleRoot || !strings.Contains(ce.Reason, "CVE-2012-2459") {
		t.Errorf("want the merkle root check naming CVE-2012-2459, got %v", ce)
	}
	// With the merkle check trusted away, the repeated transactions are
	// still refused as duplicates.
	ce = checkErr(t, mainnetRules(t, true).Check(blk, damagedHeight))
	if ce.Check != chain.CheckDuplicateTx {
		t.Errorf("proof trusted: want the duplicate transaction check, got %v", ce)
	}
}

// A transaction of the block spends one output with two inputs: the
// duplicate input check names it and both inputs, also when the proof is
// trusted (the check needs the block alone).
func TestCheckRefusesATransactionSpendingAnOutputTwice(t *testing.T) {
	var msg wire.MsgBlock
	if err := msg.Deserialize(bytes.NewReader(mainnetBlocks(t)[damagedHeight].Raw)); err != nil {
		t.Fatal(err)
	}
	spender := msg.Transactions[1]
	spender.AddTxIn(wire.NewTxIn(&spender.TxIn[0].PreviousOutPoint, nil, nil))
	var raw bytes.Buffer
	if err := msg.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	blk, err := chain.ParseBlock(raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("transaction 1, %s: inputs 0 and %d both spend %s", spender.TxHash(), len(spender.TxIn)-1, spender.TxIn[0].PreviousOutPoint)
	if ce := checkErr(t, mainnetRules(t, true).Check(blk, damagedHeight)); ce.Check != chain.CheckDuplicateInput || ce.Reason != want {
		t.Errorf("want the duplicate input check, %q; got %v", want, ce)
	}
}

// DuplicateInput finds the first input spending what one before it does,
// among a handful of inputs and among many.
func TestDuplicateInput(t *testing.T) {
	tx := func(n int, repeat ...[2]int) *wire.MsgTx {
		msg := wire.NewMsgTx(1)
		for i := range n {
			msg.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{byte(i), byte(i >> 8)}, Index: uint32(i)}, nil, nil))
		}
		for _, r := range repeat {
			msg.TxIn[r[1]].PreviousOutPoint = msg.TxIn[r[0]].PreviousOutPoint
		}
		return msg
	}
	for _, c := range []struct {
		name          string
		tx            *wire.MsgTx
		first, second int
		found         bool
	}{
		{"no input", tx(0), 0, 0, false},
		{"one input", tx(1), 0, 0, false},
		{"a handful, distinct", tx(16), 0, 0, false},
		{"a handful, the last repeating the first", tx(16, [2]int{0, 15}), 0, 15, true},
		{"many, distinct", tx(40), 0, 0, false},
		{"many, two repeats", tx(40, [2]int{30, 35}, [2]int{2, 20}), 2, 20, true},
	} {
		first, second, found := chain.DuplicateInput(c.tx)
		if first != c.first || second != c.second || found != c.found {
			t.Errorf("%s: %d, %d, %v; want %d, %d, %v", c.name, first, second, found, c.first, c.second, c.found)
		}
	}
}

func TestCheckRefusesBlockWithoutTransactions(t *testing.T) {
	raw := mainnetBlocks(t)[damagedHeight].Raw
	blk, err := chain.ParseBlock(append(bytes.Clone(raw[:chain.HeaderSize]), 0))
	if err != nil {
		t.Fatal(err)
	}
	if ce := checkErr(t, mainnetRules(t, false).Check(blk, damagedHeight)); ce.Check != chain.CheckCoinbase {
		t.Errorf("want the coinbase check, got %v", ce)
	}
}

// From BIP34's height on, the coinbase names its block's height: a real
// BSV block offered at another height is refused.
func TestCheckCoinbaseHeight(t *testing.T) {
	const height = 384188
	blk := bsvBlocks(t)[height]
	ce := checkErr(t, mainnetRules(t, true).Check(blk, height+1))
	if ce.Check != chain.CheckCoinbaseHeight || !strings.Contains(ce.Reason, "384188") {
		t.Errorf("want the BIP34 check naming height 384188, got %v", ce)
	}
}

// Each network's limit on bits: the regtest and simnet genesis blocks
// pass their own network's rules and are refused by mainnet's, whose limit
// is far lower.
func TestCheckProofOfWorkLimitPerNetwork(t *testing.T) {
	for _, params := range []*chaincfg.Params{&chaincfg.MainNetParams, &chaincfg.RegressionNetParams, &chaincfg.SimNetParams, &chaincfg.TestNet3Params} {
		var buf bytes.Buffer
		if err := params.GenesisBlock.Serialize(&buf); err != nil {
			t.Fatal(err)
		}
		blk, err := chain.ParseBlock(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		own, err := chain.NetworkRules(params.Name, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := own.Check(blk, 0); err != nil {
			t.Errorf("%s genesis under its own rules: %v", params.Name, err)
		}
		err = mainnetRules(t, false).Check(blk, 0)
		if overLimit := params.PowLimitBits != chaincfg.MainNetParams.PowLimitBits; overLimit {
			if ce := checkErr(t, err); ce.Check != chain.CheckProofOfWork || !strings.Contains(ce.Reason, "higher than max") {
				t.Errorf("%s genesis under mainnet's rules: want its bits over the limit, got %v", params.Name, ce)
			}
		}
	}
	if _, err := chain.NetworkRules("nosuchnet", false); err == nil || !strings.Contains(err.Error(), "nosuchnet") {
		t.Errorf("an unknown network: want an error naming it, got %v", err)
	}
}

// Check's cost on the mainnet file, with the proof checked and trusted.
func BenchmarkCheckMainnet(b *testing.B) {
	blocks := mainnetBlocks(b)
	for _, trust := range []bool{false, true} {
		rules, err := chain.NetworkRules("mainnet", trust)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(map[bool]string{false: "checked", true: "trusted"}[trust], func(b *testing.B) {
			for b.Loop() {
				for height, blk := range blocks {
					if err := rules.Check(blk, uint32(height)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
