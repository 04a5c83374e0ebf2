package client

import (
	"context"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/proto/pbconv"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// HealthInfo is what Health reports.
type HealthInfo struct {
	Engine, Network string
	Height          uint32
	// Tip is the store's last connected block; nil for an empty store.
	Tip *utxo.Tip
	// Indexed reports that the daemon keeps the address index; IndexTip
	// is the index's last block, nil while it is empty.
	Indexed  bool
	IndexTip *utxo.Tip
	// NextHeight is the first height whose block the daemon needs: the
	// one after Tip, or, after a crash left the index or the block store
	// behind the store, the first block they lack, which the daemon takes
	// again. A resuming client sends from there.
	NextHeight uint32
}

// Health reports whether the daemon and its store can serve requests.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.Info(ctx)
	return err
}

// Info checks the daemon and its store and reports what they hold.
func (c *Client) Info(ctx context.Context) (HealthInfo, error) {
	r, err := c.rpc.Health(ctx, &pb.HealthRequest{})
	if err != nil {
		return HealthInfo{}, callErr(err)
	}
	info := HealthInfo{Engine: r.Engine, Network: r.Network, Height: r.Height, Indexed: r.Indexed, NextHeight: r.NextHeight}
	if info.Tip, err = blockRef(r.Tip, "tip"); err != nil {
		return HealthInfo{}, err
	}
	if info.IndexTip, err = blockRef(r.IndexTip, "index tip"); err != nil {
		return HealthInfo{}, err
	}
	return info, nil
}

// blockRef decodes a block reference of a reply; nil stays nil.
func blockRef(ref *pb.BlockRef, what string) (*utxo.Tip, error) {
	if ref == nil {
		return nil, nil
	}
	hash, err := chainhash.NewHash(ref.Hash)
	if err != nil {
		return nil, fmt.Errorf("the daemon's %s: %w", what, err)
	}
	return &utxo.Tip{Height: ref.Height, Hash: *hash}, nil
}

// Summary is the store's summary, the JSON line `utxostore import` prints.
func (c *Client) Summary(ctx context.Context) (utxo.Summary, error) {
	r, err := c.rpc.Summary(ctx, &pb.Empty{})
	if err != nil {
		return utxo.Summary{}, callErr(err)
	}
	return utxo.Summary{Blocks: r.Blocks, Txs: r.Txs, Utxos: r.Utxos, Satoshis: r.Satoshis, Height: r.Height, Digest: r.Digest,
		TxOuts: r.Txouts, TotalAmount: r.TotalAmount, MuHash: r.Muhash}, nil
}

// Create stores a transaction.
func (c *Client) Create(ctx context.Context, tx *chain.Tx, height uint32, opts ...utxo.CreateOption) (*utxo.Meta, error) {
	r, err := c.rpc.Create(ctx, pbconv.CreateRequest(tx, height, opts...))
	if err != nil {
		return nil, callErr(err)
	}
	return pbconv.MetaFromPB(r.Meta)
}

// CreateItem is one transaction of CreateBatch.
type CreateItem struct {
	Tx     *chain.Tx
	Height uint32
	Opts   []utxo.CreateOption
}

// CreateBatch creates many transactions in one call; each result carries
// its own error.
func (c *Client) CreateBatch(ctx context.Context, items []CreateItem) ([]*utxo.UnresolvedMetaData, error) {
	req := &pb.CreateBatchRequest{}
	for _, it := range items {
		req.Creates = append(req.Creates, pbconv.CreateRequest(it.Tx, it.Height, it.Opts...))
	}
	r, err := c.rpc.CreateBatch(ctx, req)
	if err != nil {
		return nil, callErr(err)
	}
	return metaResults(r.Results, func(i int) chainhash.Hash { return items[i].Tx.ID })
}

// Get returns a transaction's metadata (fields as in utxo.Store.Get).
func (c *Client) Get(ctx context.Context, txid chainhash.Hash, fields ...utxo.Field) (*utxo.Meta, error) {
	r, err := c.rpc.Get(ctx, &pb.GetRequest{Txid: txid[:], Fields: pbconv.FieldsToPB(fields)})
	if err != nil {
		return nil, callErr(err)
	}
	return pbconv.MetaFromPB(r.Meta)
}

// GetBatch is the batch form of Get (the store's BatchDecorate).
func (c *Client) GetBatch(ctx context.Context, txids []chainhash.Hash, fields ...utxo.Field) ([]*utxo.UnresolvedMetaData, error) {
	r, err := c.rpc.BatchDecorate(ctx, &pb.BatchDecorateRequest{Txids: pbconv.HashBytes(txids), Fields: pbconv.FieldsToPB(fields)})
	if err != nil {
		return nil, callErr(err)
	}
	return metaResults(r.Results, func(i int) chainhash.Hash { return txids[i] })
}

// BatchDecorate fills in the metadata of items (utxo.Store's form of
// GetBatch): each item gets its Meta or its Err.
func (c *Client) BatchDecorate(ctx context.Context, items []*utxo.UnresolvedMetaData, fields ...utxo.Field) error {
	txids := make([]chainhash.Hash, len(items))
	for i, it := range items {
		txids[i] = it.TxID
	}
	results, err := c.GetBatch(ctx, txids, fields...)
	if err != nil {
		return err
	}
	if len(results) != len(items) {
		return fmt.Errorf("the daemon answered %d of %d items", len(results), len(items))
	}
	for i, it := range items {
		it.Meta, it.Err = results[i].Meta, results[i].Err
	}
	return nil
}

func metaResults(results []*pb.MetaResult, txid func(int) chainhash.Hash) ([]*utxo.UnresolvedMetaData, error) {
	out := make([]*utxo.UnresolvedMetaData, len(results))
	for i, res := range results {
		meta, err := pbconv.MetaFromPB(res.Meta)
		if err != nil {
			return nil, err
		}
		out[i] = &utxo.UnresolvedMetaData{TxID: txid(i), Idx: i, Meta: meta, Err: pbconv.ErrorFromPB(res.Error)}
	}
	return out, nil
}

// Delete removes a transaction's records and external blob.
func (c *Client) Delete(ctx context.Context, txid chainhash.Hash) error {
	errs, err := c.DeleteBatch(ctx, txid)
	if err != nil {
		return err
	}
	if len(errs) != 1 {
		return fmt.Errorf("the daemon answered %d results for 1 delete", len(errs))
	}
	return errs[0]
}

// DeleteBatch removes transactions; the slice holds one error per txid.
func (c *Client) DeleteBatch(ctx context.Context, txids ...chainhash.Hash) ([]error, error) {
	r, err := c.rpc.Delete(ctx, &pb.TxIDsRequest{Txids: pbconv.HashBytes(txids)})
	if err != nil {
		return nil, callErr(err)
	}
	errs := make([]error, len(r.Errors))
	for i, e := range r.Errors {
		errs[i] = pbconv.ErrorFromPB(e)
	}
	return errs, nil
}

// GetSpend reports the state of one output.
func (c *Client) GetSpend(ctx context.Context, spend *utxo.Spend) (*utxo.SpendResponse, error) {
	r, err := c.rpc.GetSpend(ctx, &pb.GetSpendRequest{Spend: pbconv.SpendToPB(spend)})
	if err != nil {
		return nil, callErr(err)
	}
	return pbconv.SpendResponseFromPB(r)
}

// Spend spends tx's inputs, all or nothing. The spends carry each input's
// outcome; the error is the first failure.
func (c *Client) Spend(ctx context.Context, tx *chain.Tx, opts ...utxo.SpendOption) ([]*utxo.Spend, error) {
	r, err := c.rpc.Spend(ctx, pbconv.SpendRequest(tx, opts...))
	if err != nil {
		return nil, callErr(err)
	}
	spends, err := pbconv.SpendsFromPB(r.Spends)
	if err != nil {
		return nil, err
	}
	return spends, pbconv.ErrorFromPB(r.Error)
}

// Unspend reverses spends.
func (c *Client) Unspend(ctx context.Context, spends []*utxo.Spend, flagAsLocked bool) error {
	_, err := c.rpc.Unspend(ctx, &pb.UnspendRequest{Spends: pbconv.SpendsToPB(spends), FlagAsLocked: flagAsLocked})
	return callErr(err)
}

// SetMinedMulti records that the transactions were mined in a block.
func (c *Client) SetMinedMulti(ctx context.Context, txids []chainhash.Hash, info model.MinedBlockInfo) (map[chainhash.Hash][]uint32, error) {
	r, err := c.rpc.SetMinedMulti(ctx, &pb.SetMinedMultiRequest{Txids: pbconv.HashBytes(txids), Info: pbconv.MinedToPB(info)})
	if err != nil {
		return nil, callErr(err)
	}
	out := make(map[chainhash.Hash][]uint32, len(r.Mined))
	for _, m := range r.Mined {
		txid, err := pbconv.Hash(m.Txid, "txid")
		if err != nil {
			return nil, err
		}
		out[txid] = m.BlockIds
	}
	return out, nil
}

// MarkTransactionsOnLongestChain sets or clears unminedSince.
func (c *Client) MarkTransactionsOnLongestChain(ctx context.Context, txids []chainhash.Hash, on bool) error {
	_, err := c.rpc.MarkTransactionsOnLongestChain(ctx, &pb.FlagTxIDsRequest{Txids: pbconv.HashBytes(txids), Flag: on})
	return callErr(err)
}

// SetLocked sets or clears the locked flag.
func (c *Client) SetLocked(ctx context.Context, txids []chainhash.Hash, locked bool) error {
	_, err := c.rpc.SetLocked(ctx, &pb.FlagTxIDsRequest{Txids: pbconv.HashBytes(txids), Flag: locked})
	return callErr(err)
}

// GetUnminedTxIterator streams the daemon's unmined iterator. The stream
// lives as long as ctx: cancel it to stop early.
func (c *Client) GetUnminedTxIterator(ctx context.Context) (utxo.UnminedTxIterator, error) {
	stream, err := c.rpc.GetUnminedTxs(ctx, &pb.Empty{})
	if err != nil {
		return nil, callErr(err)
	}
	return unminedStream{stream}, nil
}

type unminedStream struct {
	stream pb.UtxoStore_GetUnminedTxsClient
}

// Next returns the next transaction, or nil at the end of the stream.
func (u unminedStream) Next(context.Context) (*utxo.UnminedTransaction, error) {
	m, err := u.stream.Recv()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, callErr(err)
	}
	txid, err := pbconv.Hash(m.Txid, "txid")
	if err != nil {
		return nil, err
	}
	return &utxo.UnminedTransaction{TxID: txid, CreatedAt: m.CreatedAt, UnminedSince: m.UnminedSince,
		Fee: m.Fee, SizeInBytes: m.SizeInBytes, Locked: m.Locked, Creating: m.Creating}, nil
}

// QueryOldUnminedTransactions lists unmined transactions stored at or
// before cutoffHeight.
func (c *Client) QueryOldUnminedTransactions(ctx context.Context, cutoffHeight uint32) ([]chainhash.Hash, error) {
	r, err := c.rpc.QueryOldUnminedTransactions(ctx, &pb.HeightRequest{Height: cutoffHeight})
	return txidsReply(r, err)
}

// PreserveTransactions keeps transactions until preserveUntil.
func (c *Client) PreserveTransactions(ctx context.Context, txids []chainhash.Hash, preserveUntil uint32) error {
	_, err := c.rpc.PreserveTransactions(ctx, &pb.PreserveRequest{Txids: pbconv.HashBytes(txids), PreserveUntil: preserveUntil})
	return callErr(err)
}

// ProcessExpiredPreservations runs the preservation expiry at height.
func (c *Client) ProcessExpiredPreservations(ctx context.Context, height uint32) error {
	_, err := c.rpc.ProcessExpiredPreservations(ctx, &pb.HeightRequest{Height: height})
	return callErr(err)
}

// PreviousOutputsDecorate returns the outputs tx's inputs spend.
func (c *Client) PreviousOutputsDecorate(ctx context.Context, tx *chain.Tx) ([]*wire.TxOut, error) {
	r, err := c.rpc.PreviousOutputsDecorate(ctx, &pb.TxRequest{Tx: tx.Raw})
	if err != nil {
		return nil, callErr(err)
	}
	return pbconv.TxOutsFromPB(r.Outputs), nil
}

// FreezeUTXOs and UnFreezeUTXOs are the alert system's freeze.
func (c *Client) FreezeUTXOs(ctx context.Context, spends []*utxo.Spend) error {
	_, err := c.rpc.FreezeUTXOs(ctx, &pb.SpendsRequest{Spends: pbconv.SpendsToPB(spends)})
	return callErr(err)
}

func (c *Client) UnFreezeUTXOs(ctx context.Context, spends []*utxo.Spend) error {
	_, err := c.rpc.UnFreezeUTXOs(ctx, &pb.SpendsRequest{Spends: pbconv.SpendsToPB(spends)})
	return callErr(err)
}

// ReAssignUTXO moves a frozen output to a new UTXO hash.
func (c *Client) ReAssignUTXO(ctx context.Context, old *utxo.Spend, replacement *utxo.Spend) error {
	_, err := c.rpc.ReAssignUTXO(ctx, &pb.ReAssignRequest{Utxo: pbconv.SpendToPB(old), NewUtxo: pbconv.SpendToPB(replacement)})
	return callErr(err)
}

// GetCounterConflicting returns txid's counter-conflicting set.
func (c *Client) GetCounterConflicting(ctx context.Context, txid chainhash.Hash) ([]chainhash.Hash, error) {
	r, err := c.rpc.GetCounterConflicting(ctx, &pb.TxIDRequest{Txid: txid[:]})
	return txidsReply(r, err)
}

// GetConflictingChildren returns the conflicting spenders of txid.
func (c *Client) GetConflictingChildren(ctx context.Context, txid chainhash.Hash) ([]chainhash.Hash, error) {
	r, err := c.rpc.GetConflictingChildren(ctx, &pb.TxIDRequest{Txid: txid[:]})
	return txidsReply(r, err)
}

// SetConflicting marks transactions conflicting (or not).
func (c *Client) SetConflicting(ctx context.Context, txids []chainhash.Hash, conflicting bool) ([]*utxo.Spend, []chainhash.Hash, error) {
	r, err := c.rpc.SetConflicting(ctx, &pb.FlagTxIDsRequest{Txids: pbconv.HashBytes(txids), Flag: conflicting})
	if err != nil {
		return nil, nil, callErr(err)
	}
	spends, err := pbconv.SpendsFromPB(r.Spends)
	if err != nil {
		return nil, nil, err
	}
	affected, err := pbconv.Hashes(r.Txids, "txids")
	return spends, affected, err
}

// SetBlockHeight, BlockHeight, SetMedianBlockTime and MedianBlockTime
// hold the longest chain's height and median time. GetBlockHeight and
// GetMedianBlockTime are utxo.Store's forms, which have no error to
// return: they read 0 when the daemon cannot be asked.
func (c *Client) SetBlockHeight(ctx context.Context, height uint32) error {
	_, err := c.rpc.SetBlockHeight(ctx, &pb.HeightRequest{Height: height})
	return callErr(err)
}

func (c *Client) BlockHeight(ctx context.Context) (uint32, error) {
	r, err := c.rpc.GetBlockHeight(ctx, &pb.Empty{})
	return r.GetHeight(), callErr(err)
}

func (c *Client) GetBlockHeight() uint32 {
	h, _ := c.BlockHeight(context.Background())
	return h
}

func (c *Client) SetMedianBlockTime(ctx context.Context, t uint32) error {
	_, err := c.rpc.SetMedianBlockTime(ctx, &pb.HeightRequest{Height: t})
	return callErr(err)
}

func (c *Client) MedianBlockTime(ctx context.Context) (uint32, error) {
	r, err := c.rpc.GetMedianBlockTime(ctx, &pb.Empty{})
	return r.GetHeight(), callErr(err)
}

func (c *Client) GetMedianBlockTime() uint32 {
	t, _ := c.MedianBlockTime(context.Background())
	return t
}

// ConnectBlock applies a serialised block at height on top of the tip.
func (c *Client) ConnectBlock(ctx context.Context, rawBlock []byte, height uint32) (hash chainhash.Hash, txs int, err error) {
	r, err := c.rpc.ConnectBlock(ctx, &pb.ConnectBlockRequest{Block: rawBlock, Height: height})
	if err != nil {
		return hash, 0, callErr(err)
	}
	hash, err = pbconv.Hash(r.Hash, "block hash")
	return hash, int(r.Txs), err
}

func txidsReply(r *pb.TxIDsReply, err error) ([]chainhash.Hash, error) {
	if err != nil {
		return nil, callErr(err)
	}
	return pbconv.Hashes(r.Txids, "txids")
}
