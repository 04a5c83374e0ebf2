package blockbook

import (
	"context"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/utxo"
)

// The API's answers as Go values, for a page that shows them (package
// explorer): the same reads, through the same rules, as the JSON the
// routes answer. Each is the JSON's type; its fields are the JSON's.
type (
	// Tx is a transaction, with its inputs' previous outputs, its
	// outputs' states and spenders, and its record's lifecycle.
	Tx = txJSON
	// TxInput and TxOutput are a transaction's inputs and outputs.
	TxInput  = vinJSON
	TxOutput = voutJSON
	// TxState is the store record's lifecycle; MinedIn one block that
	// mined the transaction.
	TxState = txState
	MinedIn = minedJSON
	// Block is a block's header fields and one page of its transactions.
	Block = blockJSON
	// Account is an address's or an xpub's balance and one page of its
	// history; Token one address an xpub derives.
	Account = addressJSON
	Token   = token
	// Status is the status page's answer.
	Status = statusJSON
)

// Each lookup below returns, with its error, the HTTP status the API
// answers it with: 400 for a malformed or unknown name, 404 for one that
// needs the address index when it is off.

// FindTx is GET /api/v2/tx/{txid}?spending=true: the transaction with the
// spender of each spent output.
func (a *API) FindTx(ctx context.Context, txid chainhash.Hash) (*Tx, int, error) {
	tx, code, err := a.txByID(ctx, txid, true)
	if err != nil {
		return nil, code, err
	}
	return &tx, code, nil
}

// FindBlock is GET /api/v2/block/{param}?page=page with pageSize
// transactions to a page (the API's are 1,000; pageSize is at least 1): by
// height or hash; without the block store, by height only and with no
// transactions.
func (a *API) FindBlock(ctx context.Context, param string, page, pageSize int) (*Block, int, error) {
	if a.reads.BlockStore() == nil || a.reads.AddressIndex() == nil {
		return a.storedBlock(ctx, param)
	}
	return a.block(ctx, param, page, max(pageSize, 1))
}

// FindAddress is GET /api/v2/address/{param}?details=txs: the balance
// and page page (1-based) of pageSize transactions.
func (a *API) FindAddress(ctx context.Context, param string, page, pageSize int) (*Account, int, error) {
	return a.address(ctx, param, accountQuery{page: page, pageSize: pageSize, details: detailsTxs})
}

// FindXpub is GET /api/v2/xpub/{param}?details=txs&tokens=used: the
// account's totals, its used addresses, and a page of its transactions.
func (a *API) FindXpub(ctx context.Context, param string, page, pageSize int) (*Account, int, error) {
	return a.xpub(a.newWork(ctx), param, accountQuery{page: page, pageSize: pageSize, details: detailsTxs, tokens: "used"})
}

// Status is GET /api/v2: the chain's tip, the store's counts and the
// mempool's size.
func (a *API) Status(ctx context.Context) (*Status, error) { return a.status(ctx, false) }

// Mempool lists the transactions no block holds yet.
func (a *API) Mempool(ctx context.Context) ([]*utxo.UnminedTransaction, error) {
	return utxo.Mempool(ctx, a.reads)
}

// IsXpub reports whether param is an extended public key, which
// FindXpub takes.
func IsXpub(param string) bool { return isXpub(param) }

// ParseTxid reads a txid: 64 hex digits.
func ParseTxid(param string) (chainhash.Hash, error) { return parseTxid(param) }

// BlockHeightParam reads a block's name as a height: decimal digits,
// shorter than a hash.
func BlockHeightParam(param string) (uint32, bool) { return heightParam(param) }
