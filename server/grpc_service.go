package server

import (
	"context"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/proto/pbconv"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
)

// grpcService implements the UtxoStore service over a Backend. It decodes,
// checks the batch limit, calls the store and encodes; no rule lives here.
type grpcService struct {
	pb.UnimplementedUtxoStoreServer
	b        Backend
	metrics  *Metrics
	maxBatch int
	engine   string
	network  string
	// node is the node the daemon follows (blockbook.API.SetNode), nil
	// when none.
	node func() blockbook.Node
	// snapshots take Backup's and DumpCoins' copies; nil when the daemon
	// takes none.
	snapshots Snapshots
}

// checkBatch refuses a list longer than --max-batch.
func (s *grpcService) checkBatch(n int, what string) error {
	if n > s.maxBatch {
		return badRequest("%s: %d items is over the batch limit of %d (--max-batch); split the request", what, n, s.maxBatch)
	}
	return nil
}

func (s *grpcService) txids(raw [][]byte, what string) ([]chainhash.Hash, error) {
	if err := s.checkBatch(len(raw), what); err != nil {
		return nil, err
	}
	h, err := pbconv.Hashes(raw, what)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return h, nil
}

// batchTxs parses the transaction of every item of the batch named what,
// refusing the whole batch, before any item is applied, when it is over
// the limit or an item is malformed.
func batchTxs[T interface{ GetTx() []byte }](s *grpcService, items []T, what string) ([]*chain.Tx, error) {
	if err := s.checkBatch(len(items), what); err != nil {
		return nil, err
	}
	txs := make([]*chain.Tx, len(items))
	for i, item := range items {
		tx, err := pbconv.Tx(item.GetTx())
		if err != nil {
			return nil, badRequest("%s[%d]: %v", what, i, err)
		}
		txs[i] = tx
	}
	return txs, nil
}

func (s *grpcService) tx(raw []byte) (*chain.Tx, error) {
	tx, err := pbconv.Tx(raw)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return tx, nil
}

func (s *grpcService) Health(ctx context.Context, _ *pb.HealthRequest) (*pb.HealthReply, error) {
	if err := s.b.Health(ctx); err != nil {
		return nil, storeStatus(err)
	}
	reply := &pb.HealthReply{Engine: s.engine, Network: s.network, Height: s.b.GetBlockHeight()}
	tip, ok, err := s.b.Tip(ctx)
	if err != nil {
		return nil, storeStatus(err)
	}
	if ok {
		reply.Tip = &pb.BlockRef{Height: tip.Height, Hash: tip.Hash[:]}
	}
	levels, err := s.b.Levels(ctx)
	if err != nil {
		return nil, storeStatus(err)
	}
	if l := levels.Index; l != nil {
		reply.Indexed = true
		if l.HasTip {
			reply.IndexTip = &pb.BlockRef{Height: l.Tip.Height, Hash: l.Tip.Hash[:]}
		}
	}
	if reply.NextHeight, err = s.b.NextHeight(ctx); err != nil {
		return nil, storeStatus(err)
	}
	return reply, nil
}

func (s *grpcService) Create(ctx context.Context, r *pb.CreateRequest) (*pb.MetaReply, error) {
	tx, err := s.tx(r.Tx)
	if err != nil {
		return nil, err
	}
	meta, err := s.b.Create(ctx, tx, r.BlockHeight, utxo.WithCreateOptions(pbconv.CreateOptionsFromPB(r)))
	if err != nil {
		return nil, storeStatus(err)
	}
	return &pb.MetaReply{Meta: pbconv.MetaToPB(meta)}, nil
}

// CreateBatch parses every transaction before creating any, so a malformed
// one refuses the whole batch and changes nothing.
func (s *grpcService) CreateBatch(ctx context.Context, r *pb.CreateBatchRequest) (*pb.MetaBatchReply, error) {
	txs, err := batchTxs(s, r.Creates, "creates")
	if err != nil {
		return nil, err
	}
	s.metrics.observeBatch(len(txs))
	reply := &pb.MetaBatchReply{Results: make([]*pb.MetaResult, len(txs))}
	for i, tx := range txs {
		meta, err := s.b.Create(ctx, tx, r.Creates[i].BlockHeight, utxo.WithCreateOptions(pbconv.CreateOptionsFromPB(r.Creates[i])))
		reply.Results[i] = &pb.MetaResult{Meta: pbconv.MetaToPB(meta), Error: pbconv.ErrorToPB(err)}
	}
	return reply, nil
}

func (s *grpcService) Get(ctx context.Context, r *pb.GetRequest) (*pb.MetaReply, error) {
	txid, err := pbconv.Hash(r.Txid, "txid")
	if err != nil {
		return nil, badRequest("%v", err)
	}
	fields, err := pbconv.FieldsFromPB(r.Fields)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	meta, err := s.b.Get(ctx, txid, fields...)
	if err != nil {
		return nil, storeStatus(err)
	}
	return &pb.MetaReply{Meta: pbconv.MetaToPB(meta)}, nil
}

func (s *grpcService) BatchDecorate(ctx context.Context, r *pb.BatchDecorateRequest) (*pb.MetaBatchReply, error) {
	txids, err := s.txids(r.Txids, "txids")
	if err != nil {
		return nil, err
	}
	fields, err := pbconv.FieldsFromPB(r.Fields)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	items := make([]*utxo.UnresolvedMetaData, len(txids))
	for i, txid := range txids {
		items[i] = &utxo.UnresolvedMetaData{TxID: txid, Idx: i}
	}
	if err := s.b.BatchDecorate(ctx, items, fields...); err != nil {
		return nil, storeStatus(err)
	}
	reply := &pb.MetaBatchReply{Results: make([]*pb.MetaResult, len(items))}
	for i, it := range items {
		reply.Results[i] = &pb.MetaResult{Meta: pbconv.MetaToPB(it.Meta), Error: pbconv.ErrorToPB(it.Err)}
	}
	return reply, nil
}

func (s *grpcService) Delete(ctx context.Context, r *pb.TxIDsRequest) (*pb.BatchReply, error) {
	txids, err := s.txids(r.Txids, "txids")
	if err != nil {
		return nil, err
	}
	reply := &pb.BatchReply{Errors: make([]*pb.StoreError, len(txids))}
	for i, txid := range txids {
		reply.Errors[i] = pbconv.ErrorToPB(s.b.Delete(ctx, txid))
	}
	return reply, nil
}

func (s *grpcService) GetSpend(ctx context.Context, r *pb.GetSpendRequest) (*pb.GetSpendReply, error) {
	sp, err := pbconv.SpendFromPB(r.Spend)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	resp, err := s.b.GetSpend(ctx, sp)
	if err != nil {
		return nil, storeStatus(err)
	}
	return pbconv.SpendResponseToPB(resp), nil
}

func (s *grpcService) GetSpendBatch(ctx context.Context, r *pb.GetSpendBatchRequest) (*pb.GetSpendBatchReply, error) {
	spends, err := s.spends(r.Spends)
	if err != nil {
		return nil, err
	}
	reply := &pb.GetSpendBatchReply{Replies: make([]*pb.GetSpendReply, len(spends)), Errors: make([]*pb.StoreError, len(spends))}
	for i, sp := range spends {
		resp, err := s.b.GetSpend(ctx, sp)
		reply.Replies[i], reply.Errors[i] = pbconv.SpendResponseToPB(resp), pbconv.ErrorToPB(err)
	}
	return reply, nil
}

// Spend answers a refused spend with the per-input outcomes in the reply
// (not as a gRPC error), because the caller needs them all, e.g. the
// existing spender of a SPENT output.
func (s *grpcService) Spend(ctx context.Context, r *pb.SpendRequest) (*pb.SpendReply, error) {
	tx, err := s.tx(r.Tx)
	if err != nil {
		return nil, err
	}
	return s.spend(ctx, tx, r), nil
}

func (s *grpcService) spend(ctx context.Context, tx *chain.Tx, r *pb.SpendRequest) *pb.SpendReply {
	spends, err := s.b.Spend(ctx, tx, utxo.WithSpendOptions(pbconv.SpendOptionsFromPB(r)))
	return &pb.SpendReply{Spends: pbconv.SpendsToPB(spends), Error: pbconv.ErrorToPB(err)}
}

func (s *grpcService) SpendBatch(ctx context.Context, r *pb.SpendBatchRequest) (*pb.SpendBatchReply, error) {
	txs, err := batchTxs(s, r.Spends, "spends")
	if err != nil {
		return nil, err
	}
	reply := &pb.SpendBatchReply{Replies: make([]*pb.SpendReply, len(txs))}
	for i, tx := range txs {
		reply.Replies[i] = s.spend(ctx, tx, r.Spends[i])
	}
	return reply, nil
}

func (s *grpcService) spends(raw []*pb.Spend) ([]*utxo.Spend, error) {
	if err := s.checkBatch(len(raw), "spends"); err != nil {
		return nil, err
	}
	spends, err := pbconv.SpendsFromPB(raw)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return spends, nil
}

func (s *grpcService) Unspend(ctx context.Context, r *pb.UnspendRequest) (*pb.Empty, error) {
	spends, err := s.spends(r.Spends)
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, storeStatus(s.b.Unspend(ctx, spends, r.FlagAsLocked))
}

func (s *grpcService) SetMinedMulti(ctx context.Context, r *pb.SetMinedMultiRequest) (*pb.SetMinedMultiReply, error) {
	txids, err := s.txids(r.Txids, "txids")
	if err != nil {
		return nil, err
	}
	if r.Info == nil {
		return nil, badRequest("info: missing")
	}
	ids, err := s.b.SetMinedMulti(ctx, txids, pbconv.MinedFromPB(r.Info))
	if err != nil {
		return nil, storeStatus(err)
	}
	reply := &pb.SetMinedMultiReply{}
	for _, txid := range txids {
		if blocks, ok := ids[txid]; ok {
			reply.Mined = append(reply.Mined, &pb.BlockIDs{Txid: txid[:], BlockIds: blocks})
		}
	}
	return reply, nil
}

func (s *grpcService) MarkTransactionsOnLongestChain(ctx context.Context, r *pb.FlagTxIDsRequest) (*pb.Empty, error) {
	txids, err := s.txids(r.Txids, "txids")
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, storeStatus(s.b.MarkTransactionsOnLongestChain(ctx, txids, r.Flag))
}

func (s *grpcService) SetLocked(ctx context.Context, r *pb.FlagTxIDsRequest) (*pb.Empty, error) {
	txids, err := s.txids(r.Txids, "txids")
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, storeStatus(s.b.SetLocked(ctx, txids, r.Flag))
}

func (s *grpcService) GetUnminedTxs(_ *pb.Empty, stream pb.UtxoStore_GetUnminedTxsServer) error {
	ctx := stream.Context()
	it, err := s.b.GetUnminedTxIterator(ctx)
	if err != nil {
		return storeStatus(err)
	}
	for {
		u, err := it.Next(ctx)
		if err != nil {
			return storeStatus(err)
		}
		if u == nil {
			return nil
		}
		if err := stream.Send(&pb.UnminedTransaction{Txid: u.TxID[:], CreatedAt: u.CreatedAt, UnminedSince: u.UnminedSince,
			Fee: u.Fee, SizeInBytes: u.SizeInBytes, Locked: u.Locked, Creating: u.Creating}); err != nil {
			return err
		}
	}
}

func (s *grpcService) QueryOldUnminedTransactions(ctx context.Context, r *pb.HeightRequest) (*pb.TxIDsReply, error) {
	txids, err := s.b.QueryOldUnminedTransactions(ctx, r.Height)
	if err != nil {
		return nil, storeStatus(err)
	}
	return &pb.TxIDsReply{Txids: pbconv.HashBytes(txids)}, nil
}

func (s *grpcService) PreserveTransactions(ctx context.Context, r *pb.PreserveRequest) (*pb.Empty, error) {
	txids, err := s.txids(r.Txids, "txids")
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, storeStatus(s.b.PreserveTransactions(ctx, txids, r.PreserveUntil))
}

func (s *grpcService) ProcessExpiredPreservations(ctx context.Context, r *pb.HeightRequest) (*pb.Empty, error) {
	return &pb.Empty{}, storeStatus(s.b.ProcessExpiredPreservations(ctx, r.Height))
}

func (s *grpcService) PreviousOutputsDecorate(ctx context.Context, r *pb.TxRequest) (*pb.PreviousOutputsReply, error) {
	tx, err := s.tx(r.Tx)
	if err != nil {
		return nil, err
	}
	outs, err := s.b.PreviousOutputsDecorate(ctx, tx)
	if err != nil {
		return nil, storeStatus(err)
	}
	return &pb.PreviousOutputsReply{Outputs: pbconv.TxOutsToPB(outs)}, nil
}

func (s *grpcService) FreezeUTXOs(ctx context.Context, r *pb.SpendsRequest) (*pb.Empty, error) {
	spends, err := s.spends(r.Spends)
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, storeStatus(s.b.FreezeUTXOs(ctx, spends))
}

func (s *grpcService) UnFreezeUTXOs(ctx context.Context, r *pb.SpendsRequest) (*pb.Empty, error) {
	spends, err := s.spends(r.Spends)
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, storeStatus(s.b.UnFreezeUTXOs(ctx, spends))
}

func (s *grpcService) ReAssignUTXO(ctx context.Context, r *pb.ReAssignRequest) (*pb.Empty, error) {
	old, err := pbconv.SpendFromPB(r.Utxo)
	if err != nil {
		return nil, badRequest("utxo: %v", err)
	}
	replacement, err := pbconv.SpendFromPB(r.NewUtxo)
	if err != nil {
		return nil, badRequest("new_utxo: %v", err)
	}
	return &pb.Empty{}, storeStatus(s.b.ReAssignUTXO(ctx, old, replacement))
}

func (s *grpcService) GetCounterConflicting(ctx context.Context, r *pb.TxIDRequest) (*pb.TxIDsReply, error) {
	return s.txidQuery(ctx, r, s.b.GetCounterConflicting)
}

func (s *grpcService) GetConflictingChildren(ctx context.Context, r *pb.TxIDRequest) (*pb.TxIDsReply, error) {
	return s.txidQuery(ctx, r, s.b.GetConflictingChildren)
}

func (s *grpcService) txidQuery(ctx context.Context, r *pb.TxIDRequest, query func(context.Context, chainhash.Hash) ([]chainhash.Hash, error)) (*pb.TxIDsReply, error) {
	txid, err := pbconv.Hash(r.Txid, "txid")
	if err != nil {
		return nil, badRequest("%v", err)
	}
	txids, err := query(ctx, txid)
	if err != nil {
		return nil, storeStatus(err)
	}
	return &pb.TxIDsReply{Txids: pbconv.HashBytes(txids)}, nil
}

func (s *grpcService) SetConflicting(ctx context.Context, r *pb.FlagTxIDsRequest) (*pb.SetConflictingReply, error) {
	txids, err := s.txids(r.Txids, "txids")
	if err != nil {
		return nil, err
	}
	spends, affected, err := s.b.SetConflicting(ctx, txids, r.Flag)
	if err != nil {
		return nil, storeStatus(err)
	}
	return &pb.SetConflictingReply{Spends: pbconv.SpendsToPB(spends), Txids: pbconv.HashBytes(affected)}, nil
}

func (s *grpcService) SetBlockHeight(ctx context.Context, r *pb.HeightRequest) (*pb.Empty, error) {
	return &pb.Empty{}, storeStatus(s.b.SetBlockHeight(ctx, r.Height))
}

func (s *grpcService) GetBlockHeight(context.Context, *pb.Empty) (*pb.HeightReply, error) {
	return &pb.HeightReply{Height: s.b.GetBlockHeight()}, nil
}

func (s *grpcService) SetMedianBlockTime(ctx context.Context, r *pb.HeightRequest) (*pb.Empty, error) {
	return &pb.Empty{}, storeStatus(s.b.SetMedianBlockTime(ctx, r.Height))
}

func (s *grpcService) GetMedianBlockTime(context.Context, *pb.Empty) (*pb.HeightReply, error) {
	return &pb.HeightReply{Height: s.b.GetMedianBlockTime()}, nil
}

// ConnectBlock is bounded by the gRPC message limit, not by --max-batch: a
// block is one unit and cannot be split. A block that fails the network's
// rules is refused (InvalidArgument, naming the check) before anything of
// it is applied.
func (s *grpcService) ConnectBlock(ctx context.Context, r *pb.ConnectBlockRequest) (*pb.ConnectBlockReply, error) {
	if len(r.Block) == 0 {
		return nil, badRequest("block: no bytes")
	}
	blk, err := chain.ParseBlock(r.Block)
	if err != nil {
		return nil, badRequest("block at height %d: %v", r.Height, err)
	}
	if err := s.b.ConnectBlock(ctx, blk, r.Height); err != nil {
		return nil, storeStatus(err)
	}
	return &pb.ConnectBlockReply{Hash: blk.Hash[:], Height: r.Height, Txs: uint32(len(blk.Txs))}, nil
}

func (s *grpcService) Summary(ctx context.Context, _ *pb.Empty) (*pb.SummaryReply, error) {
	sum, err := s.b.Summary(ctx)
	if err != nil {
		return nil, storeStatus(err)
	}
	return &pb.SummaryReply{Blocks: sum.Blocks, Txs: sum.Txs, Utxos: sum.Utxos, Satoshis: sum.Satoshis, Height: sum.Height, Digest: sum.Digest,
		Txouts: sum.TxOuts, TotalAmount: sum.TotalAmount, Muhash: sum.MuHash}, nil
}
