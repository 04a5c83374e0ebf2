package index

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// Utxo is one unspent output of an address.
type Utxo struct {
	TxID   chainhash.Hash
	Vout   uint32
	Height uint32
	Value  uint64
}

// Balance is the addressBalance entry of an address. Amounts are satoshis.
type Balance struct {
	Txs     uint32 // transactions in which the address occurs
	Sent    uint64
	Balance uint64
	UTXOs   []Utxo // oldest first
}

// Received is the total ever paid to the address.
func (b *Balance) Received() uint64 { return b.Balance + b.Sent }

// Balance returns the balance of addrDesc (an output script). An address
// the index has never seen has the zero Balance.
func (ix *Index) Balance(addrDesc []byte) (Balance, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.db == nil {
		return Balance{}, ErrClosed
	}
	ab, err := ix.loadBalance(addrDesc)
	if err != nil || ab == nil {
		return Balance{}, err
	}
	b := Balance{Txs: ab.txs, Sent: ab.sent, Balance: ab.balance, UTXOs: make([]Utxo, len(ab.utxos))}
	for i, u := range ab.utxos {
		b.UTXOs[i] = Utxo{TxID: u.txid, Vout: uint32(u.vout), Height: u.height, Value: u.value}
	}
	return b, nil
}

// UTXOs returns the unspent outputs of addrDesc, oldest first.
func (ix *Index) UTXOs(addrDesc []byte) ([]Utxo, error) {
	b, err := ix.Balance(addrDesc)
	return b.UTXOs, err
}
