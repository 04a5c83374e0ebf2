package blockbook

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/httpreply"
	"github.com/utxostore/utxostore/utxo"
)

// statusJSON is Blockbook v0.3.4's /api/v2 shape (api.SystemInfo: the
// blockbook and backend parts), with the store's own counts under
// "utxostore". The store is its own backend: backend describes the chain
// it holds.
type statusJSON struct {
	Blockbook struct {
		Coin            string `json:"coin"`
		Host            string `json:"host"`
		Version         string `json:"version"`
		GitCommit       string `json:"gitCommit"`
		BuildTime       string `json:"buildTime"`
		SyncMode        bool   `json:"syncMode"`
		InitialSync     bool   `json:"initialSync"`
		InSync          bool   `json:"inSync"`
		BestHeight      uint32 `json:"bestHeight"`
		LastBlockTime   string `json:"lastBlockTime"`
		InSyncMempool   bool   `json:"inSyncMempool"`
		LastMempoolTime string `json:"lastMempoolTime"`
		MempoolSize     int    `json:"mempoolSize"`
		Decimals        int    `json:"decimals"`
		DbSize          int64  `json:"dbSize"`
		About           string `json:"about"`
	} `json:"blockbook"`
	Backend struct {
		Chain         string `json:"chain"`
		Blocks        uint32 `json:"blocks"`
		BestBlockHash string `json:"bestBlockHash"`
		Difficulty    string `json:"difficulty"`
		Version       string `json:"version"`
	} `json:"backend"`
	Utxostore struct {
		Engine          string `json:"engine"`
		Network         string `json:"network"`
		Height          uint32 `json:"height"`
		MedianBlockTime uint32 `json:"medianBlockTime,omitempty"`
		Blocks          uint64 `json:"blocks"`
		Txs             uint64 `json:"txs"`
		// Utxos, Satoshis and Digest come from Summary, which walks every
		// record: they are there only when asked for (?summary=true), and
		// absent rather than zero otherwise.
		Utxos    *uint64 `json:"utxos,omitempty"`
		Satoshis *uint64 `json:"satoshis,omitempty"`
		Digest   string  `json:"digest,omitempty"`
		// IndexTip and BlockStoreTip are the last blocks of the address
		// index and the block store (absent when they are not kept or
		// hold none), which the block path keeps level with the store's
		// tip; NextHeight is the first block the daemon needs
		// (blockpath.Path.Next).
		// TxOuts, TotalAmount and MuHash are the set's statistics as
		// Bitcoin Core's gettxoutsetinfo reports them, kept in the chain
		// state: read without a walk.
		TxOuts        uint64   `json:"txouts"`
		TotalAmount   uint64   `json:"total_amount"`
		MuHash        string   `json:"muhash"`
		IndexTip      *tipJSON `json:"indexTip,omitempty"`
		BlockStoreTip *tipJSON `json:"blockStoreTip,omitempty"`
		NextHeight    uint32   `json:"nextHeight"`
	} `json:"utxostore"`
}

// tipJSON names a block.
type tipJSON struct {
	Height uint32 `json:"height"`
	Hash   string `json:"hash"`
}

// levelJSON is a derived store's level, nil when it is not kept or empty.
func levelJSON(l *blockpath.Level) *tipJSON {
	if l == nil || !l.HasTip {
		return nil
	}
	return &tipJSON{Height: l.Tip.Height, Hash: l.Tip.Hash.String()}
}

// handleStatus answers from the chain state and the daemon's own state,
// which cost a few reads whatever the size of the store, so that monitoring
// may poll it; ?summary=true adds the UTXO set's summary, a walk of every
// record (Reads.Summary).
func (a *API) handleStatus(w http.ResponseWriter, r *http.Request) {
	withSummary, err := summaryParam(r)
	if err != nil {
		httpreply.Error(w, http.StatusBadRequest, "%v", err)
		return
	}
	out, err := a.status(r.Context(), withSummary)
	if err != nil {
		httpreply.Error(w, http.StatusInternalServerError, "%v", err)
		return
	}
	httpreply.JSON(w, http.StatusOK, out)
}

// status is the status page's answer; withSummary adds the UTXO set's
// summary.
func (a *API) status(ctx context.Context, withSummary bool) (*statusJSON, error) {
	var out statusJSON
	u := &out.Utxostore
	if withSummary {
		sum, err := a.reads.Summary(ctx)
		if err != nil {
			return nil, fmt.Errorf("summarising the store: %w", err)
		}
		u.Utxos, u.Satoshis, u.Digest = &sum.Utxos, &sum.Satoshis, sum.Digest
	}
	chainSum, err := a.reads.ChainSummary(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the chain state: %w", err)
	}
	b := &out.Blockbook
	b.Coin, b.Host, b.Version, b.GitCommit, b.BuildTime = coinName(a.opts.Network), "utxostore", "utxostore", "", ""
	b.SyncMode, b.InSync, b.InSyncMempool, b.Decimals = true, true, true, 8
	b.About = "utxostore: a UTXO database for Bitcoin-family nodes, serving Blockbook's API"
	out.Backend.Chain, out.Backend.Version = a.opts.Network, "utxostore"
	if tip := chainSum.Tip; chainSum.HasTip {
		b.BestHeight, out.Backend.Blocks, out.Backend.BestBlockHash = tip.Height, tip.Height, tip.Hash.String()
		meta, ok, err := a.reads.BlockAt(ctx, tip.Height)
		if err != nil {
			return nil, fmt.Errorf("reading the tip's block: %w", err)
		}
		if ok {
			b.LastBlockTime = time.Unix(meta.Time, 0).UTC().Format(time.RFC3339)
			out.Backend.Difficulty = difficulty(meta.Bits)
		}
	}
	// The unmined transactions are found by an index scan, a cost that
	// grows with the mempool, not with the store.
	if mempool, err := utxo.Mempool(ctx, a.reads); err == nil {
		b.MempoolSize = len(mempool)
	}
	// The unmined transactions are read live, so there is no mempool
	// sync time; the tip's time stands for it, which keeps the status the
	// same between two requests while the store is unchanged.
	b.LastMempoolTime = b.LastBlockTime
	if blocks := a.reads.BlockStore(); blocks != nil {
		b.DbSize, _ = blocks.DiskBytes()
	}
	stats, err := a.reads.SetStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the set's statistics: %w", err)
	}
	u.TxOuts, u.TotalAmount, u.MuHash = stats.TxOuts, stats.TotalAmount, stats.MuHash
	levels, err := a.reads.Levels(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the stores' tips: %w", err)
	}
	u.IndexTip, u.BlockStoreTip = levelJSON(levels.Index), levelJSON(levels.Blocks)
	if u.NextHeight, err = a.reads.NextHeight(ctx); err != nil {
		return nil, fmt.Errorf("reading the stores' tips: %w", err)
	}
	u.Engine, u.Network, u.Height, u.MedianBlockTime = a.opts.Engine, a.opts.Network, a.reads.GetBlockHeight(), a.reads.GetMedianBlockTime()
	u.Blocks, u.Txs = chainSum.Blocks, chainSum.Txs
	return &out, nil
}

// summaryParam reads the status's summary parameter: absent is false; a
// value strconv.ParseBool does not know is refused, so that a typo never
// passes for "no".
func summaryParam(r *http.Request) (bool, error) {
	values, given := r.URL.Query()["summary"]
	if !given {
		return false, nil
	}
	on, err := strconv.ParseBool(values[0])
	if err != nil {
		return false, fmt.Errorf("summary=%q: want summary=true to add the UTXO set's count, value and digest (a walk of every record), or summary=false", values[0])
	}
	return on, nil
}

// coinName is Blockbook's coin name for the network.
func coinName(network string) string {
	if n, err := chain.LookupNetwork(network); err == nil {
		return n.Coin
	}
	return "Bitcoin"
}
