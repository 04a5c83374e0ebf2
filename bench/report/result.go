// Package report holds what a bench run measures (per-engine results) and
// renders it: a Markdown table, JSON, an SVG chart.
package report

// Class names a class of store calls, timed separately.
type Class string

// The classes. Items are what a class's throughput counts.
const (
	// Create: one Create call per transaction (items: transactions).
	Create Class = "create"
	// Spend: one Spend call per transaction (items: inputs spent).
	Spend Class = "spend"
	// SetMined: one ConnectBlock call per block whose transactions were
	// all submitted before, so that it marks them mined (items:
	// transactions); it also creates the coinbase and re-checks the
	// block's spends, which a node's block connection does too.
	SetMined Class = "set-mined"
	// Read: one BatchDecorate call per batch (items: outpoints).
	Read Class = "read"
	// Disconnect: one DisconnectBlock per block (items: transactions).
	Disconnect Class = "disconnect"
	// Reject: one refused double-spend attempt (items: attempts).
	Reject Class = "reject"
)

// Classes lists the classes in report order.
var Classes = []Class{Create, Spend, SetMined, Read, Disconnect, Reject}

// ClassResult is one class of one engine.
type ClassResult struct {
	Calls     uint64  `json:"calls"`
	Items     uint64  `json:"items"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"items_per_second"`
	P50Micros float64 `json:"p50_us"`
	P99Micros float64 `json:"p99_us"`
	MaxMicros float64 `json:"max_us"`
}

// Point is one interval of the throughput series.
type Point struct {
	// Live is the UTXO set size at the end of the interval.
	Live uint64 `json:"live"`
	// PerSecond is the items of every class per second of store time
	// within the interval.
	PerSecond float64 `json:"items_per_second"`
}

// EngineResult is everything measured for one engine.
type EngineResult struct {
	Engine  string                `json:"engine"`
	Classes map[Class]ClassResult `json:"classes"`
	Series  []Point               `json:"series"`
	// Growth is the warm-up's throughput as the live set grows to its
	// target, a point per Options.GrowthStep UTXOs (driver): the blocks
	// that build the set, connected fresh, before the measured ones.
	Growth   []Point `json:"growth,omitempty"`
	Digest   string  `json:"digest"`
	Utxos    uint64  `json:"utxos"`
	Satoshis uint64  `json:"satoshis"`
	// StoreSeconds is the time spent in measured store calls; WallSeconds
	// the whole replay, warm-up included.
	StoreSeconds float64 `json:"store_seconds"`
	WallSeconds  float64 `json:"wall_seconds"`
	// StatsWaitSeconds is how long the set's statistics took to catch up
	// with the tip after the last block: what is left of their work,
	// which the store does beside the blocks, not on their path.
	StatsWaitSeconds float64 `json:"stats_wait_seconds,omitempty"`
	// WarmupStatsWaitSeconds is how long the set's statistics took to
	// catch up with the warm-up's last block before the measured blocks
	// began. The warm-up's blocks are large (by default 10,000
	// transactions of 20 outputs), and the hashing of their coins would
	// otherwise run beside the first measured blocks and count in their
	// store time.
	WarmupStatsWaitSeconds float64 `json:"warmup_stats_wait_seconds,omitempty"`
	// LogFsyncs and LogFsyncSeconds count the fsyncs of Sozu's log over
	// the measured blocks, and the time they took: under --sync always
	// the floor of a durable call's latency. Zero for other engines.
	LogFsyncs       uint64  `json:"log_fsyncs,omitempty"`
	LogFsyncSeconds float64 `json:"log_fsync_seconds,omitempty"`
	// SkippedSpends counts inputs naming outputs the workload never
	// created (block files not starting at genesis).
	SkippedSpends uint64 `json:"skipped_spends"`
	// DiskBytes is the size of the data directory after close (0 for
	// engines with no local files).
	DiskBytes int64 `json:"disk_bytes"`
	// LogicalBytes is what the store was asked to record (benchmetric).
	LogicalBytes int64 `json:"logical_bytes"`
	// DeviceWriteBytes is what the block device under the data directory
	// wrote over the whole replay (sysstat.DeviceWrites), or where that
	// cannot be read /proc/self/io write_bytes of the engine's process;
	// SyscallWriteBytes is the process's wchar.
	DeviceWriteBytes  int64 `json:"device_write_bytes"`
	SyscallWriteBytes int64 `json:"syscall_write_bytes"`
	// PeakRSSBytes is the engine's process maximum resident set size;
	// ReplayPeakRSSBytes the same, read at the end of the replay, before
	// the final Summary, which walks the whole set (utxo.Summary holds a
	// line per UTXO) and so can exceed what the workload itself needs.
	PeakRSSBytes       int64 `json:"peak_rss_bytes"`
	ReplayPeakRSSBytes int64 `json:"replay_peak_rss_bytes"`
	// MinimalBytes is, for the map reference, the minimal serialised
	// size of its final set (benchmetric.MinimalUTXOBytes summed), the
	// denominator of every engine's disk/minimal.
	MinimalBytes uint64 `json:"minimal_bytes,omitempty"`
	// Index is the address index's share, when bench --index fed the
	// blocks along the block path; nil otherwise.
	Index *IndexResult `json:"index,omitempty"`
	// Derived by the parent process.
	DiskPerMinimal float64            `json:"disk_per_minimal,omitempty"`
	WriteAmp       float64            `json:"write_amplification,omitempty"`
	VsPebble       map[string]float64 `json:"vs_pebble,omitempty"`
	VsMap          map[string]float64 `json:"vs_map,omitempty"`
	DigestOK       bool               `json:"digest_ok"`
	// Snapshot, with bench --snapshot, is the dump of the final set as a
	// Core snapshot and its load into a new store.
	Snapshot *SnapshotResult `json:"snapshot,omitempty"`
	// Recovery, with bench --crash, is the kill of the replay and the
	// reopen of its store; the other figures are then those of the
	// replay's resumption on the reopened store.
	Recovery *RecoveryResult `json:"recovery,omitempty"`
	Err      string          `json:"error,omitempty"`
}

// RecoveryResult is a replay killed with SIGKILL at a measured block
// boundary and its store opened again, replaying its log.
type RecoveryResult struct {
	// AppliedOps is the operations of the stream applied before the kill;
	// LiveUTXOs the set's size there.
	AppliedOps int    `json:"applied_ops"`
	LiveUTXOs  uint64 `json:"live_utxos"`
	// LogBytes is what the engine's log held at the kill, the records the
	// open replays, and CheckpointLogBytes the engine's bound on it
	// (Sozu's ckptlog).
	LogBytes           int64 `json:"log_bytes"`
	CheckpointLogBytes int64 `json:"checkpoint_log_bytes"`
	// OpenSeconds is the time the reopen took, replay included, and
	// ReplayedRecords and ReplayedBytes what it replayed.
	OpenSeconds     float64 `json:"open_seconds"`
	ReplayedRecords int     `json:"replayed_records"`
	ReplayedBytes   int64   `json:"replayed_bytes"`
}

// SnapshotResult is the final set dumped as a Core snapshot (`utxostore
// snapshot dump`) and the file loaded into a new store (`snapshot load`),
// each timed as its whole command, beside the replay that built the set.
type SnapshotResult struct {
	// Coins is the set's size as Bitcoin Core counts it (txouts).
	Coins       uint64  `json:"coins"`
	FileBytes   int64   `json:"file_bytes"`
	DumpSeconds float64 `json:"dump_seconds"`
	LoadSeconds float64 `json:"load_seconds"`
}

// IndexResult is what the address index cost an engine's replay, over the
// whole replay (the warm-up's blocks included), measured along the block
// path (blockpath.StepTimes).
type IndexResult struct {
	// Blocks and Txs are the blocks the index connected, a
	// reorganisation's included, and their transactions.
	Blocks uint64 `json:"blocks"`
	Txs    uint64 `json:"txs"`
	// Seconds is the time in the index: connecting, disconnecting and
	// writing what its bulk import holds, the last write included.
	Seconds float64 `json:"seconds"`
	// StoreSeconds is the store's time over the same replay: its block
	// connections and disconnections along the path, warm-up included,
	// and the measured submissions and reads. KeepSeconds is the block
	// store's, CheckSeconds the block checks'.
	StoreSeconds float64 `json:"store_seconds"`
	KeepSeconds  float64 `json:"keep_seconds"`
	CheckSeconds float64 `json:"check_seconds"`
	// WarmupSeconds and WarmupStoreSeconds are the index's and the store's
	// share of Seconds and StoreSeconds before the measured blocks began:
	// the warm-up's block connections and, for the index, its write of
	// what it held from them (blockpath.Path.Flush); a block file replay
	// has no warm-up.
	WarmupSeconds      float64 `json:"warmup_seconds"`
	WarmupStoreSeconds float64 `json:"warmup_store_seconds"`
	// WarmupFlushSeconds is the part of WarmupSeconds the index's write of
	// what it held took.
	WarmupFlushSeconds float64 `json:"warmup_flush_seconds"`
	// DiskBytes is the size of the index's directory after close;
	// LiveBytes the keys and values of the live entries of Blockbook's
	// columns, their logical size (index.Footprint), Entries their number
	// and Digest their digest; ElectrumBytes those of the Electrum
	// columns, which the directory holds too. BlockStoreBytes is the block
	// store's directory. The engine's DiskBytes leaves both out.
	DiskBytes       int64  `json:"disk_bytes"`
	BlockStoreBytes int64  `json:"block_store_bytes"`
	LiveBytes       uint64 `json:"live_bytes"`
	ElectrumBytes   uint64 `json:"electrum_bytes"`
	Entries         uint64 `json:"entries"`
	Digest          string `json:"digest"`
	// CommittedBytes are the bytes of the batches the index committed and
	// WrittenBytes what its Pebble database wrote for them (log, flushes,
	// compactions).
	CommittedBytes uint64 `json:"committed_bytes"`
	WrittenBytes   uint64 `json:"written_bytes"`
	// Derived by the parent process.
	BlocksPerSecond float64 `json:"blocks_per_second,omitempty"`
	TxsPerSecond    float64 `json:"txs_per_second,omitempty"`
	// PerStore is Seconds ÷ StoreSeconds: the goal is at most 1.
	// WarmupPerStore and MeasuredPerStore split it where the measured
	// blocks begin.
	PerStore         float64 `json:"index_per_store,omitempty"`
	WarmupPerStore   float64 `json:"warmup_index_per_store,omitempty"`
	MeasuredPerStore float64 `json:"measured_index_per_store,omitempty"`
	DiskPerMinimal   float64 `json:"disk_per_minimal,omitempty"`
	WriteAmp         float64 `json:"write_amplification,omitempty"`
}
