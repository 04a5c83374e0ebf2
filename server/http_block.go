package server

import (
	"net/http"
	"strconv"
)

// blockJSON is Blockbook's /api/v2/block/{height} shape, limited to what
// the store keeps per block: hash, parent, header fields, size and
// transaction count. The transaction list needs the block itself, which
// the store does not keep.
type blockJSON struct {
	Page              int    `json:"page"`
	TotalPages        int    `json:"totalPages"`
	ItemsOnPage       int    `json:"itemsOnPage"`
	Hash              string `json:"hash"`
	PreviousBlockHash string `json:"previousBlockHash,omitempty"`
	NextBlockHash     string `json:"nextBlockHash,omitempty"`
	Height            uint32 `json:"height"`
	Confirmations     uint32 `json:"confirmations"`
	Size              int64  `json:"size,omitempty"`
	Time              int64  `json:"time,omitempty"`
	Version           int32  `json:"version,omitempty"`
	MerkleRoot        string `json:"merkleRoot,omitempty"`
	Nonce             string `json:"nonce,omitempty"`
	Bits              string `json:"bits,omitempty"`
	TxCount           int    `json:"txCount"`
}

func (s *Server) handleBlock(w http.ResponseWriter, r *http.Request) {
	height, err := strconv.ParseUint(r.PathValue("height"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, "malformed block height %s: want a decimal height (lookup by hash is not supported)", echoed(r.PathValue("height")))
		return
	}
	b, ok, err := s.backend.BlockAt(r.Context(), uint32(height))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading block %d: %v", height, err)
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "block %d not found", height)
		return
	}
	out := blockJSON{Page: 1, TotalPages: 1, Hash: b.Hash.String(), Height: uint32(height), TxCount: b.Txs,
		Size: b.Size, Time: b.Time, Version: b.Version}
	if b.Time != 0 { // connected with its header
		out.MerkleRoot = b.MerkleRoot.String()
		out.Nonce = strconv.FormatUint(uint64(b.Nonce), 10)
		out.Bits = strconv.FormatUint(uint64(b.Bits), 16)
	}
	if height > 0 {
		out.PreviousBlockHash = b.PrevHash.String()
	}
	if next, ok, err := s.backend.BlockAt(r.Context(), uint32(height)+1); err == nil && ok {
		out.NextBlockHash = next.Hash.String()
	}
	tip, ok, err := s.backend.Tip(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the tip: %v", err)
		return
	}
	if ok && tip.Height >= uint32(height) {
		out.Confirmations = tip.Height - uint32(height) + 1
	}
	writeJSON(w, http.StatusOK, out)
}
