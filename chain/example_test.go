package chain_test

import (
	"fmt"
	"io"
	"log"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/chain"
)

// Import every output of every block in a blk*.dat or raw block file,
// holding at most one transaction in memory at a time.
func ExampleOpenBlockFile() {
	file, err := chain.OpenBlockFile("blk00000.dat")
	if err != nil {
		log.Fatal(err)
	}
	defer file.Close()
	for {
		block, err := file.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err) // names the frame, transaction, field and offset
		}
		for {
			tx, err := block.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				log.Fatal(err)
			}
			for vout, out := range tx.Msg.TxOut {
				key := chain.UTXOHash(tx.ID, uint32(vout), out.PkScript, uint64(out.Value))
				_ = key // store it
			}
		}
		info := block.Info() // Size is final once Next has returned io.EOF
		fmt.Println(info.Hash, info.TxCount, info.Size)
	}
}

// The expected value was computed independently with Python's hashlib.
func ExampleUTXOHash() {
	txid, _ := chainhash.NewHashFromStr("4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b")
	h := chain.UTXOHash(*txid, 0, []byte{0x51}, 5_000_000_000)
	fmt.Printf("%x\n", h[:8])
	// Output: 3df5ad1e35a12916
}
