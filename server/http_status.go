package server

import (
	"context"
	"net/http"
	"sync"

	"github.com/utxostore/utxostore/utxo"
)

// statusJSON is Blockbook's /api/status shape (blockbook + backend), with
// the store's own counts under "utxostore".
type statusJSON struct {
	Blockbook struct {
		Coin       string `json:"coin"`
		Host       string `json:"host"`
		InSync     bool   `json:"inSync"`
		BestHeight uint32 `json:"bestHeight"`
		Decimals   int    `json:"decimals"`
		About      string `json:"about"`
	} `json:"blockbook"`
	Backend struct {
		Chain         string `json:"chain"`
		Blocks        uint32 `json:"blocks"`
		BestBlockHash string `json:"bestBlockHash,omitempty"`
	} `json:"backend"`
	Utxostore struct {
		Engine          string `json:"engine"`
		Network         string `json:"network"`
		Height          uint32 `json:"height"`
		MedianBlockTime uint32 `json:"medianBlockTime,omitempty"`
		Blocks          uint64 `json:"blocks"`
		Txs             uint64 `json:"txs"`
		Utxos           uint64 `json:"utxos"`
		Satoshis        uint64 `json:"satoshis"`
		Digest          string `json:"digest"`
	} `json:"utxostore"`
}

// summaryCache keeps the last Summary per store state, the tip and the
// count of writes the daemon served: Summary walks every record, so it is
// computed again only after the store changed, not once per request.
type summaryCache struct {
	mu     sync.Mutex
	tip    utxo.Tip
	writes uint64
	ok     bool
	sum    utxo.Summary
}

// get returns the summary of the store as of writes, the daemon's count of
// served writes read before the call.
func (c *summaryCache) get(ctx context.Context, b Backend, writes uint64) (utxo.Summary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tip, _, err := b.Tip(ctx)
	if err != nil {
		return utxo.Summary{}, err
	}
	if c.ok && c.tip == tip && c.writes == writes {
		return c.sum, nil
	}
	sum, err := b.Summary(ctx)
	if err != nil {
		return sum, err
	}
	c.tip, c.writes, c.sum, c.ok = tip, writes, sum, true
	return sum, nil
}

// summary is the store's Summary as of now, from the cache when no write
// was served since it was computed.
func (s *Server) summary(ctx context.Context) (utxo.Summary, error) {
	return s.summaries.get(ctx, s.backend, s.writes.Load())
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	sum, err := s.summary(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "summarising the store: %v", err)
		return
	}
	var out statusJSON
	out.Blockbook.Coin, out.Blockbook.Host, out.Blockbook.InSync = "Bitcoin", "utxostore", true
	out.Blockbook.Decimals, out.Blockbook.About = 8, "utxostore: a UTXO database for Bitcoin-family nodes"
	out.Backend.Chain = s.opts.Network
	tip, ok, err := s.backend.Tip(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the tip: %v", err)
		return
	}
	if ok {
		out.Blockbook.BestHeight, out.Backend.Blocks, out.Backend.BestBlockHash = tip.Height, tip.Height, tip.Hash.String()
	}
	u := &out.Utxostore
	u.Engine, u.Network, u.Height, u.MedianBlockTime = s.opts.Engine, s.opts.Network, s.backend.GetBlockHeight(), s.backend.GetMedianBlockTime()
	u.Blocks, u.Txs, u.Utxos, u.Satoshis, u.Digest = sum.Blocks, sum.Txs, sum.Utxos, sum.Satoshis, sum.Digest
	writeJSON(w, http.StatusOK, out)
}
