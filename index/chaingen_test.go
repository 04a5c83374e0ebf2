package index

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
)

// genChain builds a deterministic random chain that exercises what the
// index must undo exactly: few addresses (so one address gets several
// outputs per block and per tx), spends of outputs of the same block and
// of old blocks, OP_RETURN and empty scripts, multi-input transactions.
func genChain(seed uint64, blocks int) []*Block {
	r := rand.New(rand.NewPCG(seed, 1))
	scripts := make([][]byte, 7)
	for i := range scripts {
		scripts[i] = []byte{0x76, 0xa9, byte(i + 1)}
	}
	type coin struct {
		op Outpoint
	}
	var pool []coin
	var n uint64
	newID := func() chainhash.Hash {
		n++
		return chainhash.DoubleHashH([]byte{byte(seed), byte(n), byte(n >> 8), byte(n >> 16)})
	}
	script := func() []byte {
		switch x := r.IntN(20); {
		case x == 0:
			return []byte{0x6a, 0x04, 0xde, 0xad, 0xbe, 0xef}
		case x == 1:
			return nil
		default:
			return scripts[r.IntN(len(scripts))]
		}
	}
	outputs := func(tx *Tx) {
		for k := 1 + r.IntN(4); k > 0; k-- {
			s := script()
			v := uint64(r.IntN(3_000_000_000))
			if len(s) > 0 && s[0] == 0x6a {
				v = 0
			}
			tx.Outputs = append(tx.Outputs, Output{Script: s, Value: v})
		}
	}
	addToPool := func(tx *Tx) {
		for i, o := range tx.Outputs {
			if len(o.Script) > 0 && o.Script[0] == 0x6a {
				continue
			}
			pool = append(pool, coin{Outpoint{TxID: tx.ID, Vout: uint32(i)}})
		}
	}
	var chain []*Block
	for h := 0; h < blocks; h++ {
		b := &Block{Height: uint32(h), Hash: newID(), Time: uint32(1231006505 + 600*h), Size: uint32(200 + r.IntN(100000))}
		cb := Tx{ID: newID(), Inputs: []Outpoint{{Coinbase: true}}}
		outputs(&cb)
		b.Txs = append(b.Txs, cb)
		addToPool(&b.Txs[0])
		for k := r.IntN(6); k > 0 && len(pool) > 0; k-- {
			tx := Tx{ID: newID()}
			for m := 1 + r.IntN(3); m > 0 && len(pool) > 0; m-- {
				i := r.IntN(len(pool))
				tx.Inputs = append(tx.Inputs, pool[i].op)
				pool[i] = pool[len(pool)-1]
				pool = pool[:len(pool)-1]
			}
			outputs(&tx)
			b.Txs = append(b.Txs, tx)
			addToPool(&b.Txs[len(b.Txs)-1])
		}
		chain = append(chain, b)
	}
	return chain
}

// freshAddressesChain is blocks of txs transactions that spend one or two
// outputs and pay two, as the real chain does: four in five outputs pay
// an address no output paid before (one in twenty of them by a
// pay-to-pubkey script, as each coinbase does), the rest one paid before.
func freshAddressesChain(blocks, txs int) []*Block {
	r := rand.New(rand.NewPCG(1, 2))
	var ids uint64
	newID := func() chainhash.Hash {
		ids++
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], ids)
		return chainhash.DoubleHashH(b[:])
	}
	var addresses uint64
	script := func(p2pk bool) []byte {
		if p2pk {
			s := make([]byte, 35)
			s[0], s[34] = txscript.OP_DATA_33, txscript.OP_CHECKSIG
			addresses++
			binary.LittleEndian.PutUint64(s[1:], addresses)
			return s
		}
		a := addresses
		if r.IntN(5) > 0 || a == 0 {
			addresses++
			a = addresses
		} else {
			a = 1 + r.Uint64N(a)
		}
		hash160 := make([]byte, 20)
		binary.LittleEndian.PutUint64(hash160, a)
		return p2pkhScript(hash160)
	}
	var pool []Outpoint
	var chain []*Block
	for h := range blocks {
		b := &Block{Height: uint32(h), Hash: newID(), Time: uint32(1231006505 + 600*h), Size: 1000}
		cb := Tx{ID: newID(), Inputs: []Outpoint{{Coinbase: true}}, Outputs: []Output{{Script: script(true), Value: 50}}}
		b.Txs = append(b.Txs, cb)
		pool = append(pool, Outpoint{TxID: cb.ID})
		for range txs {
			if len(pool) < 2 {
				break
			}
			tx := Tx{ID: newID()}
			for m := 1 + r.IntN(2); m > 0; m-- {
				i := r.IntN(len(pool))
				tx.Inputs = append(tx.Inputs, pool[i])
				pool[i] = pool[len(pool)-1]
				pool = pool[:len(pool)-1]
			}
			for range 2 {
				tx.Outputs = append(tx.Outputs, Output{Script: script(r.IntN(20) == 0), Value: 10})
			}
			b.Txs = append(b.Txs, tx)
			for i := range tx.Outputs {
				pool = append(pool, Outpoint{TxID: tx.ID, Vout: uint32(i)})
			}
		}
		chain = append(chain, b)
	}
	return chain
}
