package server

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/utxostore/utxostore/utxo/model"
)

// Metrics are the daemon's Prometheus metrics, in their own registry so
// that several servers (tests) can live in one process.
type Metrics struct {
	Registry *prometheus.Registry

	operations *prometheus.CounterVec   // utxo_operations_total{op,outcome}
	latency    *prometheus.HistogramVec // utxo_operation_duration_seconds{op}
	errors     *prometheus.CounterVec   // utxo_store_errors{code}
	batchSize  prometheus.Histogram     // utxo_create_batch_size
	external   prometheus.Histogram     // utxo_create_external
	// awaitingMessage is the gRPC calls begun whose message has not
	// arrived (grpc_inflight.go).
	awaitingMessage prometheus.Gauge // utxostore_grpc_calls_awaiting_message
}

// NewMetrics registers the metrics, with the Go runtime and process
// collectors beside them.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "utxo_operations_total", Help: "Store operations by operation and outcome (ok, error).",
		}, []string{"op", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "utxo_operation_duration_seconds", Help: "Latency of store operations.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "utxo_store_errors", Help: "Errors returned by the store, by error code (UNKNOWN: not a store error).",
		}, []string{"code"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "utxo_create_batch_size", Help: "Transactions per create batch (CreateBatch RPC, ConnectBlock).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}),
		external: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "utxo_create_external", Help: "Duration in seconds of creates whose transaction goes to the external blob store.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
		}),
		awaitingMessage: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "utxostore_grpc_calls_awaiting_message", Help: "gRPC calls begun whose request message has not arrived yet.",
		}),
	}
	m.Registry.MustRegister(m.operations, m.latency, m.errors, m.batchSize, m.external, m.awaitingMessage,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe records one operation that started at start and ended with err.
func (m *Metrics) observe(op string, start time.Time, err error) {
	m.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err == nil {
		m.operations.WithLabelValues(op, "ok").Inc()
		return
	}
	m.operations.WithLabelValues(op, "error").Inc()
	m.countError(err)
}

// observeBatch records the transactions of one create batch (a
// CreateBatch call, a connected block).
func (m *Metrics) observeBatch(txs int) { m.batchSize.Observe(float64(txs)) }

// countError counts err by its store error code.
func (m *Metrics) countError(err error) {
	code := "UNKNOWN"
	var e *model.Error
	if errors.As(err, &e) {
		code = e.Code.String()
	}
	m.errors.WithLabelValues(code).Inc()
}
