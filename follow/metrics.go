package follow

import (
	"errors"
	"math"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/utxostore/utxostore/utxo/model"
)

// Metrics are the follower's Prometheus metrics; register them (they are
// a prometheus.Collector) where they are to be served.
type Metrics struct {
	peerConnected  prometheus.Gauge       // utxostore_follow_peer_connected
	peerHeight     prometheus.Gauge       // utxostore_follow_peer_height
	storeHeight    prometheus.Gauge       // utxostore_follow_store_height
	behind         prometheus.Gauge       // utxostore_follow_blocks_behind
	mempool        *prometheus.CounterVec // utxostore_follow_mempool_txs_total{outcome}
	unmined        prometheus.Gauge       // utxostore_follow_unmined_txs
	reorgs         prometheus.Counter     // utxostore_follow_reorgs_total
	lastReorgDepth prometheus.Gauge       // utxostore_follow_last_reorg_depth
	reconnects     prometheus.Counter     // utxostore_follow_disconnects_total
	bans           prometheus.Counter     // utxostore_follow_bans_total
	bannedUntil    prometheus.Gauge       // utxostore_follow_peer_banned_until_seconds
}

// NewMetrics makes the follower's metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		peerConnected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "utxostore_follow_peer_connected", Help: "1 while the follower is connected to a peer that has told its best chain, else 0 (the peer height and blocks behind are then NaN: unknown)."}),
		peerHeight:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "utxostore_follow_peer_height", Help: "Height of the peer's best block, as its headers tell it; NaN while no connected peer has told it."}),
		storeHeight:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "utxostore_follow_store_height", Help: "Height of the store's tip."}),
		behind:        prometheus.NewGauge(prometheus.GaugeOpts{Name: "utxostore_follow_blocks_behind", Help: "Blocks the store is behind the peer's best block; NaN while no connected peer has told it."}),
		mempool: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "utxostore_follow_mempool_txs_total",
			Help: "Unconfirmed transactions from the peer: outcome accepted (stored unmined), known (already stored), or the store's error code of a refusal.",
		}, []string{"outcome"}),
		unmined: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "utxostore_follow_unmined_txs",
			Help: "Unmined transactions in the store, conflicting ones included until the unmined retention removes them (counted at the tip after each block, and as the node's transactions arrive).",
		}),
		reorgs:         prometheus.NewCounter(prometheus.CounterOpts{Name: "utxostore_follow_reorgs_total", Help: "Reorganisations to the peer's branch."}),
		lastReorgDepth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "utxostore_follow_last_reorg_depth", Help: "Blocks disconnected by the last reorganisation."}),
		reconnects:     prometheus.NewCounter(prometheus.CounterOpts{Name: "utxostore_follow_disconnects_total", Help: "Connections to the peer that ended (refused, lost, or dropped for invalid data)."}),
		bans:           prometheus.NewCounter(prometheus.CounterOpts{Name: "utxostore_follow_bans_total", Help: "Bans of the peer for sending invalid data."}),
		bannedUntil:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "utxostore_follow_peer_banned_until_seconds", Help: "Unix time at which the peer's ban for invalid data runs out; 0 while it is not banned."}),
	}
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.peerConnected, m.peerHeight, m.storeHeight, m.behind, m.mempool, m.unmined, m.reorgs, m.lastReorgDepth, m.reconnects, m.bans, m.bannedUntil}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

func (m *Metrics) heights(peer, store int32) {
	m.peerConnected.Set(1)
	m.peerHeight.Set(float64(peer))
	m.storeHeight.Set(float64(store))
	m.behind.Set(float64(max(peer-store, 0)))
}

// peerUnknown says no connected peer has told its chain: the last peer's
// height, and how far behind it the store was, no longer hold, and a
// dashboard must not go on showing them (the store's height still does).
func (m *Metrics) peerUnknown() {
	m.peerConnected.Set(0)
	m.peerHeight.Set(math.NaN())
	m.behind.Set(math.NaN())
}

func (m *Metrics) reorg(depth int) {
	m.reorgs.Inc()
	m.lastReorgDepth.Set(float64(depth))
}

// mempoolTx counts one unconfirmed transaction by what became of it.
func (m *Metrics) mempoolTx(err error) {
	outcome := "accepted"
	var e *model.Error
	switch {
	case err == nil:
		m.unmined.Inc()
	case errors.Is(err, model.ErrTxExists):
		outcome = "known"
	case errors.As(err, &e):
		outcome = e.Code.String()
	default:
		outcome = "UNKNOWN"
	}
	m.mempool.WithLabelValues(outcome).Inc()
}
