package electrum

import "github.com/prometheus/client_golang/prometheus"

// metrics count the server's connections and requests; the daemon serves
// them beside its own (Collectors).
type metrics struct {
	requests *prometheus.CounterVec
	conns    prometheus.Gauge
	// statusReads counts the statuses the notifier read to find those a
	// block or the mempool changed.
	statusReads prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "utxostore_electrum_requests_total",
			Help: "Electrum protocol requests by method (\"other\" for a method the server does not know) and outcome (ok or error).",
		}, []string{"method", "outcome"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "utxostore_electrum_connections",
			Help: "Open Electrum protocol connections.",
		}),
		statusReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "utxostore_electrum_notify_status_reads_total",
			Help: "Subscribed script hashes' statuses the notifier read again, after blocks or a change of the mempool, to find those that changed.",
		}),
	}
}

// Collectors are the server's metrics, for the daemon's registry.
func (s *Server) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.requests, s.metrics.conns, s.metrics.statusReads}
}

// count records one request's outcome.
func (m *metrics) count(method string, known bool, err error) {
	if !known {
		method = "other"
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.requests.WithLabelValues(method, outcome).Inc()
}
