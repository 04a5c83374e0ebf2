package electrum

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/index"
)

// scriptHashParam reads a script hash as the protocol writes it: the
// sha256 of the output script, reversed, in hex.
func scriptHashParam(p params) (index.ScriptHash, error) {
	var s string
	if err := p.need(0, "scripthash", &s); err != nil {
		return index.ScriptHash{}, err
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return index.ScriptHash{}, invalidParams("scripthash %.80q is not 32 bytes of hex", s)
	}
	var sh index.ScriptHash
	for i := range b {
		sh[i] = b[31-i]
	}
	return sh, nil
}

// scriptHashString is how the protocol writes sh.
func scriptHashString(sh index.ScriptHash) string {
	return chainhash.Hash(sh).String()
}

// histEntry is one transaction of a script hash's history.
type histEntry struct {
	txid   chainhash.Hash
	height int64 // 0 unmined, -1 unmined with an unmined parent
	fee    uint64
}

// script is what the index knows of a script hash: its script and
// address descriptor; ok is false when no indexed output paid it.
type script struct {
	script, desc []byte
}

// p2pk is true for a pay-to-pubkey script, which the index files under
// the pay-to-pubkey-hash addrDesc of its key.
func (sc script) p2pk() bool { return len(sc.script) != len(sc.desc) }

// shared is true when another script shares the addrDesc: entries of the
// index must then be told apart (ScriptReads.PaysP2PK).
func (sc script) shared() bool { return index.IsP2PKHShape(sc.desc) }

func (s *Server) lookup(sh index.ScriptHash) (sc script, ok bool, err error) {
	scripts, idx := s.reads.Scripts(), s.reads.AddressIndex()
	if scripts == nil || idx == nil {
		return script{}, false, badRequest("the server keeps no address index (serve --index keeps it)")
	}
	raw, ok, err := scripts.Script(sh)
	if err != nil || !ok {
		return script{}, false, err
	}
	return script{script: raw, desc: index.AddrDesc(raw)}, true, nil
}

// confirmed is the script hash's mined history in blocks from to to
// (inclusive; to 0 is no limit), oldest first and in block order within a
// block; more than limit transactions are refused, naming flag.
func (s *Server) confirmed(ctx context.Context, sh index.ScriptHash, from, to uint32, limit int, flag string) ([]histEntry, error) {
	sc, ok, err := s.lookup(sh)
	if err != nil || !ok {
		return nil, err
	}
	h, err := s.reads.AddressIndex().History(ctx, sc.desc, 1, limit+1, from, to)
	if err != nil {
		return nil, err
	}
	if h.Total > limit {
		return nil, badRequest("the history holds %d transactions, over the limit of %d one answer holds (%s); ask for it by height range with blockchain.scripthash.get_history's from_height and to_height (protocol 1.5)", h.Total, limit, flag)
	}
	var out []histEntry
	// History is newest block first; a block's own transactions are put
	// in block order below.
	for i := len(h.Txs) - 1; i >= 0; {
		j := i
		for j >= 0 && h.Txs[j].Height == h.Txs[i].Height {
			j--
		}
		var block []histEntry
		for k := j + 1; k <= i; k++ {
			keep, err := s.ownEntry(sc, h.Txs[k])
			if err != nil {
				return nil, err
			}
			if keep {
				block = append(block, histEntry{txid: h.Txs[k].TxID, height: int64(h.Txs[k].Height)})
			}
		}
		if len(block) > 1 {
			if err := s.blockOrder(ctx, uint32(block[0].height), block); err != nil {
				return nil, err
			}
		}
		out = append(out, block...)
		i = j
	}
	return out, nil
}

// ownEntry reports whether an entry of the addrDesc's history is the
// script's own: for a pay-to-pubkey script or the pay-to-pubkey-hash
// script of the same key, one of its outputs or inputs is of that kind.
func (s *Server) ownEntry(sc script, tx index.HistoryTx) (bool, error) {
	if !sc.shared() {
		return true, nil
	}
	for _, i := range tx.Indexes {
		n, input := uint32(i), false
		if i < 0 {
			n, input = uint32(^i), true
		}
		p2pk, err := s.reads.Scripts().PaysP2PK(tx.TxID, n, input)
		if err != nil {
			return false, err
		}
		if p2pk == sc.p2pk() {
			return true, nil
		}
	}
	return false, nil
}

// blockOrder sorts the entries of one block as the block orders them.
func (s *Server) blockOrder(ctx context.Context, height uint32, entries []histEntry) error {
	txids, err := s.blocks.txids(ctx, s, height)
	if err != nil {
		return err
	}
	pos := make(map[chainhash.Hash]int, len(entries))
	for _, e := range entries {
		pos[e.txid] = -1
	}
	for i, id := range txids {
		if _, ok := pos[id]; ok {
			pos[id] = i
		}
	}
	sort.SliceStable(entries, func(a, b int) bool { return pos[entries[a].txid] < pos[entries[b].txid] })
	return nil
}

// unconfirmed is the script hash's mempool history: those with mined
// parents (height 0) first, then those with unmined ones (-1), each by
// txid.
func unconfirmed(v *mempoolView, sh index.ScriptHash) []histEntry {
	var out []histEntry
	for _, t := range v.byScript[sh] {
		e := histEntry{txid: t.txid, fee: t.fee}
		if v.unconfirmedParent(t) {
			e.height = -1
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b histEntry) int {
		if a.height != b.height {
			return int(b.height - a.height)
		}
		return compareTxids(a.txid, b.txid)
	})
	return out
}

func compareTxids(a, b chainhash.Hash) int {
	for i := 31; i >= 0; i-- {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

// status is the protocol's status of a history: the hex sha256 of every
// entry's "txid:height:", in order; nil for no history.
func status(entries []histEntry) any {
	if len(entries) == 0 {
		return nil
	}
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%s:%d:", e.txid, e.height)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// statusOf is the script hash's current status.
func (s *Server) statusOf(ctx context.Context, sh index.ScriptHash) (any, error) {
	conf, err := s.confirmed(ctx, sh, 0, 0, s.opts.MaxStatusTxs, "--max-request-txs")
	if err != nil {
		return nil, err
	}
	v, err := s.mempool(ctx)
	if err != nil {
		return nil, err
	}
	return status(append(conf, unconfirmed(v, sh)...)), nil
}

type historyItem struct {
	TxHash string  `json:"tx_hash"`
	Height int64   `json:"height"`
	Fee    *uint64 `json:"fee,omitempty"`
}

func items(entries []histEntry, mempool bool) []historyItem {
	out := make([]historyItem, len(entries))
	for i, e := range entries {
		out[i] = historyItem{TxHash: e.txid.String(), Height: e.height}
		if mempool {
			fee := e.fee
			out[i].Fee = &fee
		}
	}
	return out
}

// getHistory answers blockchain.scripthash.get_history: the whole history
// (1.4), or from protocol 1.5 the part in blocks from_height (inclusive)
// to to_height (exclusive; -1, the default, is the tip and the mempool).
func (s *Server) getHistory(ctx context.Context, p params, protocol string) (any, error) {
	sh, err := scriptHashParam(p)
	if err != nil {
		return nil, err
	}
	from, to := int64(0), int64(-1)
	if versionLE("1.5", protocol) {
		if _, err := p.get(1, "from_height", &from); err != nil {
			return nil, err
		}
		if _, err := p.get(2, "to_height", &to); err != nil {
			return nil, err
		}
		if from < 0 || to < -1 || (to >= 0 && to < from) || from > int64(^uint32(0)) || to > int64(^uint32(0)) {
			return nil, invalidParams("from_height %d and to_height %d are no range of heights", from, to)
		}
	}
	out := []historyItem{}
	if to != 0 && to != from {
		// The index takes a last height, where 0 is none: below
		// to_height is up to to_height-1, and up to 0 is asked as up to 1
		// and cut.
		last := uint32(0)
		if to > 0 {
			last = max(uint32(to-1), 1)
		}
		conf, err := s.confirmed(ctx, sh, uint32(from), last, s.opts.MaxHistory, "--electrum-max-history")
		if err != nil {
			return nil, err
		}
		for to > 0 && len(conf) > 0 && conf[len(conf)-1].height >= to {
			conf = conf[:len(conf)-1]
		}
		out = items(conf, false)
	}
	if to == -1 {
		v, err := s.mempool(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, items(unconfirmed(v, sh), true)...)
		if err := s.historyFits(len(out)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// historyFits refuses an answer of n history entries over
// --electrum-max-history: the mined part is refused as the index reads
// it, the unmined part once gathered, as the mempool holds it already.
func (s *Server) historyFits(n int) error {
	if n > s.opts.MaxHistory {
		return badRequest("the history holds %d transactions, over the limit of %d one answer holds (--electrum-max-history)", n, s.opts.MaxHistory)
	}
	return nil
}

func (s *Server) getMempool(ctx context.Context, p params) (any, error) {
	sh, err := scriptHashParam(p)
	if err != nil {
		return nil, err
	}
	v, err := s.mempool(ctx)
	if err != nil {
		return nil, err
	}
	entries := unconfirmed(v, sh)
	if err := s.historyFits(len(entries)); err != nil {
		return nil, err
	}
	return items(entries, true), nil
}

// unspent is one unspent output of a script hash.
type unspent struct {
	TxHash string `json:"tx_hash"`
	TxPos  uint32 `json:"tx_pos"`
	Height uint32 `json:"height"`
	Value  uint64 `json:"value"`
}

// confirmedUTXOs are the script's mined unspent outputs, oldest first.
func (s *Server) confirmedUTXOs(sh index.ScriptHash) ([]unspent, error) {
	sc, ok, err := s.lookup(sh)
	if err != nil || !ok {
		return nil, err
	}
	us, err := s.reads.AddressIndex().UTXOs(sc.desc)
	if err != nil {
		return nil, err
	}
	if len(us) > s.opts.MaxStatusTxs {
		return nil, badRequest("the script has %d unspent outputs, over the limit of %d (--max-request-txs)", len(us), s.opts.MaxStatusTxs)
	}
	out := make([]unspent, 0, len(us))
	for _, u := range us {
		if sc.shared() {
			p2pk, err := s.reads.Scripts().PaysP2PK(u.TxID, u.Vout, false)
			if err != nil {
				return nil, err
			}
			if p2pk != sc.p2pk() {
				continue
			}
		}
		out = append(out, unspent{TxHash: u.TxID.String(), TxPos: u.Vout, Height: u.Height, Value: u.Value})
	}
	return out, nil
}

// unspentAndUnmined is what getBalance and listUnspent start from: the
// script hash p names, its mined unspent outputs and the unmined
// transactions.
func (s *Server) unspentAndUnmined(ctx context.Context, p params) (index.ScriptHash, []unspent, *mempoolView, error) {
	sh, err := scriptHashParam(p)
	if err != nil {
		return sh, nil, nil, err
	}
	conf, err := s.confirmedUTXOs(sh)
	if err != nil {
		return sh, nil, nil, err
	}
	v, err := s.mempool(ctx)
	return sh, conf, v, err
}

func (s *Server) getBalance(ctx context.Context, p params) (any, error) {
	sh, conf, v, err := s.unspentAndUnmined(ctx, p)
	if err != nil {
		return nil, err
	}
	var confirmed uint64
	for _, u := range conf {
		confirmed += u.Value
	}
	// The mempool's change: what its transactions pay the script, less
	// what they spend of it.
	var unconfirmed int64
	for _, t := range v.byScript[sh] {
		for _, o := range t.outs {
			if o.sh == sh {
				unconfirmed += int64(o.value)
			}
		}
		for _, sp := range t.spends {
			if sp.known && sp.sh == sh {
				unconfirmed -= int64(sp.value)
			}
		}
	}
	return map[string]any{"confirmed": confirmed, "unconfirmed": unconfirmed}, nil
}

// listUnspent is the script's unspent outputs: the mined ones no unmined
// transaction spends, then the unmined ones (height 0).
func (s *Server) listUnspent(ctx context.Context, p params) (any, error) {
	sh, conf, v, err := s.unspentAndUnmined(ctx, p)
	if err != nil {
		return nil, err
	}
	out := []unspent{}
	for _, u := range conf {
		id, _ := chainhash.NewHashFromStr(u.TxHash)
		if !v.spent[wire.OutPoint{Hash: *id, Index: u.TxPos}] {
			out = append(out, u)
		}
	}
	var pending []unspent
	for _, t := range v.byScript[sh] {
		for _, o := range t.outs {
			if o.sh == sh && !v.spent[wire.OutPoint{Hash: t.txid, Index: o.vout}] {
				pending = append(pending, unspent{TxHash: t.txid.String(), TxPos: o.vout, Value: o.value})
			}
		}
	}
	slices.SortFunc(pending, func(a, b unspent) int {
		if a.TxHash != b.TxHash {
			if a.TxHash < b.TxHash {
				return -1
			}
			return 1
		}
		return int(a.TxPos) - int(b.TxPos)
	})
	return append(out, pending...), nil
}

func (c *conn) subscribe(ctx context.Context, p params) (any, error) {
	sh, err := scriptHashParam(p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	_, had := c.subs[sh]
	c.mu.Unlock()
	if !had {
		c.mu.Lock()
		n := len(c.subs)
		c.mu.Unlock()
		if n >= c.s.opts.MaxSubs {
			return nil, badRequest("%d script hashes are subscribed to on this connection, the limit (--electrum-max-subs)", n)
		}
		if c.s.subsTotal.Add(1) > int64(c.s.opts.MaxSubsTotal) {
			c.s.subsTotal.Add(-1)
			return nil, badRequest("the server holds %d subscriptions, the limit of every connection together (--electrum-max-subs-total)", c.s.opts.MaxSubsTotal)
		}
	}
	st, err := c.s.statusOf(ctx, sh)
	if err != nil {
		if !had {
			c.s.subsTotal.Add(-1)
		}
		return nil, err
	}
	c.mu.Lock()
	if c.subs == nil { // closed meanwhile
		c.mu.Unlock()
		return st, nil
	}
	c.subs[sh] = statusKey(st)
	c.mu.Unlock()
	return st, nil
}

// statusKey is a status as kept: "" for none.
func statusKey(st any) string {
	if s, ok := st.(string); ok {
		return s
	}
	return ""
}

func (c *conn) unsubscribe(p params) (any, error) {
	sh, err := scriptHashParam(p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, had := c.subs[sh]
	if had {
		delete(c.subs, sh)
		c.s.subsTotal.Add(-1)
	}
	return had, nil
}
