package blockbook

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"strconv"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
)

// blockJSON is Blockbook v0.3.4's api.Block: paging, the block's header
// fields and one page of its transactions.
type blockJSON struct {
	Page              int      `json:"page,omitempty"`
	TotalPages        int      `json:"totalPages,omitempty"`
	ItemsOnPage       int      `json:"itemsOnPage,omitempty"`
	Hash              string   `json:"hash"`
	PreviousBlockHash string   `json:"previousBlockHash,omitempty"`
	NextBlockHash     string   `json:"nextBlockHash,omitempty"`
	Height            uint32   `json:"height"`
	Confirmations     int      `json:"confirmations"`
	Size              int      `json:"size"`
	Time              int64    `json:"time,omitempty"`
	Version           int32    `json:"version"`
	MerkleRoot        string   `json:"merkleRoot"`
	Nonce             string   `json:"nonce"`
	Bits              string   `json:"bits"`
	Difficulty        string   `json:"difficulty"`
	TxCount           int      `json:"txCount"`
	Txs               []txJSON `json:"txs,omitempty"`
}

// txsInAPI is Blockbook's page size for a block's and an address's
// transactions, and the largest pageSize it takes.
const txsInAPI = 1000

// paging is Blockbook's computePaging: page is 0-based on the way in; a
// page past the end is the last page. It returns the 1-based paging and
// the range [from, to) of items on the page.
type paging struct {
	Page, TotalPages, ItemsOnPage int
}

func computePaging(count, page, itemsOnPage int) (pg paging, from, to int) {
	totalPages := max((count-1)/itemsOnPage, 0)
	// page > totalPages first: a huge page would overflow the product.
	if page < 0 || page > totalPages || page*itemsOnPage >= count {
		page = totalPages
	}
	from, to = page*itemsOnPage, min((page+1)*itemsOnPage, count)
	return paging{Page: page + 1, TotalPages: totalPages + 1, ItemsOnPage: itemsOnPage}, max(from, 0), max(to, 0)
}

// difficulty is the header's difficulty as bitcoind prints it: the
// proof-of-work limit over the target, with 16 significant digits.
func difficulty(bits uint32) string {
	target := blockchain.CompactToBig(bits)
	if target.Sign() <= 0 {
		return "0"
	}
	limit := blockchain.CompactToBig(0x1d00ffff)
	d, _ := new(big.Float).Quo(new(big.Float).SetInt(limit), new(big.Float).SetInt(target)).Float64()
	if math.IsInf(d, 0) {
		return "0"
	}
	return strconv.FormatFloat(d, 'g', 16, 64)
}

// heightParam reads a block id as a height: decimal digits, fewer than a
// hash's 64 characters (a 64-digit number is a hash that happens to hold
// no letter, never a height), within uint32.
func heightParam(param string) (uint32, bool) {
	if len(param) >= 2*chainhash.HashSize {
		return 0, false
	}
	h, err := strconv.ParseUint(param, 10, 32)
	return uint32(h), err == nil
}

// blockParam resolves the path's height or hash to a height.
func (a *API) blockParam(param string) (uint32, bool, error) {
	if h, ok := heightParam(param); ok {
		return h, true, nil
	}
	hash, err := chainhash.NewHashFromStr(param)
	if err != nil || len(param) != 2*chainhash.HashSize {
		return 0, false, nil
	}
	return a.reads.BlockStore().HeightOf(*hash)
}

func (a *API) handleBlock(w http.ResponseWriter, r *http.Request) {
	if a.reads.BlockStore() == nil || a.reads.AddressIndex() == nil {
		a.handleStoredBlock(w, r)
		return
	}
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil {
		page = 0
	}
	out, code, err := a.block(r.Context(), r.PathValue("height"), page, txsInAPI)
	writeOutcome(w, out, code, err)
}

// block is Blockbook's GetBlock: the block named by height or hash, with
// page page (1-based) of its transactions, pageSize to a page (Blockbook's
// is txsInAPI).
func (a *API) block(ctx context.Context, param string, page, pageSize int) (*blockJSON, int, error) {
	height, ok, err := a.blockParam(param)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	var mb *chain.Block
	if ok {
		if mb, err = a.blockAt(ctx, height); err != nil {
			return nil, http.StatusInternalServerError, err
		}
	}
	if mb == nil {
		return nil, http.StatusBadRequest, errorf("Block not found, %s is not a block the block store holds", echoed(param))
	}
	idx := a.reads.AddressIndex()
	best, _, err := idx.BestBlock()
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	hdr := &mb.Header
	out := &blockJSON{Hash: mb.Hash.String(), Height: height, Size: len(mb.Raw), Time: hdr.Timestamp.Unix(),
		Version: hdr.Version, MerkleRoot: hdr.MerkleRoot.String(), Nonce: strconv.FormatUint(uint64(hdr.Nonce), 10),
		Bits: strconv.FormatUint(uint64(hdr.Bits), 16), Difficulty: difficulty(hdr.Bits), TxCount: len(mb.Txs)}
	if best.Height >= height {
		out.Confirmations = int(best.Height-height) + 1
	}
	if height > 0 {
		out.PreviousBlockHash = hdr.PrevBlock.String()
	}
	next, ok, err := idx.BlockInfo(height + 1)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if ok {
		out.NextBlockHash = next.Hash.String()
	}
	pg, from, to := computePaging(len(mb.Txs), max(page-1, 0), pageSize)
	out.Page, out.TotalPages, out.ItemsOnPage = pg.Page, pg.TotalPages, pg.ItemsOnPage
	for _, tx := range mb.Txs[from:to] {
		ft, err := a.inBlock(ctx, tx, height, mb.Hash, hdr.Timestamp.Unix())
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		tx, err := a.apiTx(ctx, ft, false)
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		out.Txs = append(out.Txs, tx)
	}
	return out, http.StatusOK, nil
}

// handleStoredBlock answers /api/v2/block/{height} without the block
// store (serve without --index): the header fields and the transaction
// count the store keeps per block, and no transactions.
func (a *API) handleStoredBlock(w http.ResponseWriter, r *http.Request) {
	out, code, err := a.storedBlock(r.Context(), r.PathValue("height"))
	writeOutcome(w, out, code, err)
}

// storedBlock is the block at the height param names, as the store
// remembers it: its header fields and transaction count.
func (a *API) storedBlock(ctx context.Context, param string) (*blockJSON, int, error) {
	height, ok := heightParam(param)
	if !ok {
		return nil, http.StatusBadRequest, errorf("Block not found, malformed block height %s (without --index blocks are looked up by height only)", echoed(param))
	}
	b, found, err := a.reads.BlockAt(ctx, height)
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("reading block %d: %w", height, err)
	}
	if !found {
		return nil, http.StatusBadRequest, errorf("Block not found, height %d is above the tip", height)
	}
	out := &blockJSON{Page: 1, TotalPages: 1, ItemsOnPage: txsInAPI, Hash: b.Hash.String(), Height: height,
		TxCount: b.Txs, Size: int(b.Size), Time: b.Time, Version: b.Version, MerkleRoot: b.MerkleRoot.String(),
		Nonce: strconv.FormatUint(uint64(b.Nonce), 10), Bits: strconv.FormatUint(uint64(b.Bits), 16), Difficulty: difficulty(b.Bits)}
	if height > 0 {
		out.PreviousBlockHash = b.PrevHash.String()
	}
	next, ok, err := a.reads.BlockAt(ctx, height+1)
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("reading block %d: %w", height+1, err)
	}
	if ok {
		out.NextBlockHash = next.Hash.String()
	}
	tip, ok, err := a.reads.Tip(ctx)
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("reading the tip: %w", err)
	}
	if ok && tip.Height >= height {
		out.Confirmations = int(tip.Height-height) + 1
	}
	return out, http.StatusOK, nil
}

func (a *API) handleBlockIndex(w http.ResponseWriter, r *http.Request) {
	hash, code, err := a.blockHash(r.Context(), r.PathValue("height"))
	writeOutcome(w, map[string]string{"blockHash": hash}, code, err)
}

// blockHash is the hash of the block at the height param names (the tip
// for a param that is not a height), as Blockbook's block-index answers.
func (a *API) blockHash(ctx context.Context, param string) (string, int, error) {
	height, isHeight := heightParam(param)
	if !isHeight {
		tip, ok, err := a.reads.Tip(ctx)
		if err != nil || !ok {
			return "", http.StatusInternalServerError, errorf("the store holds no block (%v)", err)
		}
		return tip.Hash.String(), http.StatusOK, nil
	}
	b, ok, err := a.reads.BlockAt(ctx, height)
	if err != nil {
		return "", http.StatusInternalServerError, err
	}
	if !ok {
		return "", http.StatusBadRequest, errorf("Block not found, height %d is above the tip", height)
	}
	return b.Hash.String(), http.StatusOK, nil
}
