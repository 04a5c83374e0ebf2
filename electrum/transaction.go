package electrum

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/utxo/model"
)

func txidParam(p params, i int, name string) (chainhash.Hash, error) {
	var s string
	if err := p.need(i, name, &s); err != nil {
		return chainhash.Hash{}, err
	}
	h, err := chainhash.NewHashFromStr(s)
	if err != nil || len(s) != 64 {
		return chainhash.Hash{}, invalidParams("%s %.80q is not a transaction hash", name, s)
	}
	return *h, nil
}

func (s *Server) transactionGet(ctx context.Context, p params) (any, error) {
	txid, err := txidParam(p, 0, "tx_hash")
	if err != nil {
		return nil, err
	}
	var verbose bool
	if _, err := p.get(1, "verbose", &verbose); err != nil {
		return nil, err
	}
	if verbose {
		v, ok, err := s.txs.VerboseTx(ctx, txid)
		if err == nil && !ok {
			err = badRequest("no transaction %s", txid)
		}
		return v, err
	}
	raw, _, ok, err := s.txs.RawTx(ctx, txid)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, badRequest("no transaction %s", txid)
	}
	return hex.EncodeToString(raw), nil
}

func (s *Server) transactionMerkle(ctx context.Context, p params) (any, error) {
	txid, err := txidParam(p, 0, "tx_hash")
	if err != nil {
		return nil, err
	}
	var height uint32
	if err := p.need(1, "height", &height); err != nil {
		return nil, err
	}
	txids, err := s.blocks.txids(ctx, s, height)
	if err != nil {
		return nil, err
	}
	for pos, id := range txids {
		if id == txid {
			branch, _ := merkleBranch(txids, pos)
			return map[string]any{"block_height": height, "merkle": hashStrings(branch), "pos": pos}, nil
		}
	}
	return nil, badRequest("transaction %s is not in block %d", txid, height)
}

func (s *Server) idFromPos(ctx context.Context, p params) (any, error) {
	var height uint32
	var pos int
	var merkle bool
	if err := p.need(0, "height", &height); err != nil {
		return nil, err
	}
	if err := p.need(1, "tx_pos", &pos); err != nil {
		return nil, err
	}
	if _, err := p.get(2, "merkle", &merkle); err != nil {
		return nil, err
	}
	txids, err := s.blocks.txids(ctx, s, height)
	if err != nil {
		return nil, err
	}
	if pos < 0 || pos >= len(txids) {
		return nil, badRequest("no transaction at position %d of block %d, which holds %d", pos, height, len(txids))
	}
	if !merkle {
		return txids[pos].String(), nil
	}
	branch, _ := merkleBranch(txids, pos)
	return map[string]any{"tx_hash": txids[pos].String(), "merkle": hashStrings(branch)}, nil
}

// errNoNode answers a broadcast while no node is connected.
var errNoNode = &rpcError{Code: codeDaemon, Message: blockbook.ErrNoNode.Error()}

func (s *Server) broadcast(ctx context.Context, p params) (any, error) {
	var hexTx string
	if err := p.need(0, "raw_tx", &hexTx); err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(hexTx)
	if err != nil {
		return nil, invalidParams("raw_tx is not hex: %v", err)
	}
	node := s.node()
	if node == nil {
		return nil, errNoNode
	}
	txid, err := node.SendTx(ctx, raw)
	if err != nil {
		var refused *model.Error
		if errors.As(err, &refused) && !errors.Is(err, model.ErrStorage) || errors.Is(err, blockbook.ErrTxNotParsed) {
			return nil, &rpcError{Code: codeDaemon, Message: "the transaction was rejected: " + err.Error()}
		}
		return nil, err
	}
	s.poke()
	return txid.String(), nil
}

// blockCache keeps the txids of the blocks read last, for merkle proofs
// and the order of a block's transactions in a history.
type blockCache struct {
	mu     sync.Mutex
	blocks map[uint32]cachedBlock
}

type cachedBlock struct {
	hash  chainhash.Hash
	txids []chainhash.Hash
}

// blockCacheSize bounds the blocks whose txids are kept.
const blockCacheSize = 64

// txids are the txids of the chain's block at height, in block order,
// from the block store.
func (c *blockCache) txids(ctx context.Context, s *Server, height uint32) ([]chainhash.Hash, error) {
	bs := s.reads.BlockStore()
	if bs == nil {
		return nil, badRequest("the server keeps no blocks (serve --index keeps them)")
	}
	info, ok, err := s.reads.BlockAt(ctx, height)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, badRequest("no block at height %d", height)
	}
	c.mu.Lock()
	kept, found := c.blocks[height]
	c.mu.Unlock()
	if found && kept.hash == info.Hash {
		return kept.txids, nil
	}
	raw, hash, ok, err := bs.Block(height)
	if err != nil {
		return nil, err
	}
	if !ok || hash != info.Hash {
		return nil, badRequest("the block store does not hold block %d", height)
	}
	var mb wire.MsgBlock
	if err := mb.Deserialize(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	txids := make([]chainhash.Hash, len(mb.Transactions))
	for i, tx := range mb.Transactions {
		txids[i] = tx.TxHash()
	}
	c.mu.Lock()
	if c.blocks == nil || len(c.blocks) >= blockCacheSize {
		c.blocks = map[uint32]cachedBlock{}
	}
	c.blocks[height] = cachedBlock{hash: hash, txids: txids}
	c.mu.Unlock()
	return txids, nil
}
