package sozu

import (
	"fmt"
	"log/slog"
	"math/bits"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/setting"
)

// PageSize is the unit of every deep-layer read and write: the 4 KiB block
// that storage devices transfer anyway (the paper's first insight).
const PageSize = 4096

// Options tunes the table. The zero value of a field takes its default;
// DefaultOptions documents the measured defaults.
type Options struct {
	// Sync chooses when writes become durable (engine.SyncAlways: every
	// acknowledged write is in an fsynced log; engine.SyncBlock: at
	// Checkpoint).
	Sync engine.SyncMode
	// Shards partitions the hash space; each shard has one writer
	// goroutine. A power of two, at most 128.
	Shards int
	// Layer0Buckets is B0, the number of layer-0 buckets per shard; a power
	// of two. Layer 0 lives in memory.
	Layer0Buckets int
	// FanoutBits is k: layer i has B0·2^(k·i) buckets, so every bucket has
	// 2^k children.
	FanoutBits int
	// Layers is the number of layers, memory layer included. The last layer
	// never spills: its buckets grow page by page instead.
	Layers int
	// Capacity is the bucket capacity in encoded bytes, per layer; layers
	// beyond the slice use its last element.
	Capacity []int
	// FlowRatio is α_i, the fraction of its capacity an overflowing bucket
	// of layer i keeps; layers beyond the slice use its last element.
	FlowRatio []float64
	// InlineMax is the largest value kept inside a bucket; larger values go
	// to the shard's value log and the bucket holds a pointer.
	InlineMax int
	// ValueLogGarbageBytes is how much garbage (values overwritten or
	// removed) a shard's value log may hold before a page checkpoint
	// compacts it; it is compacted only once the garbage also exceeds its
	// live values, so the file stays within about twice what it holds.
	ValueLogGarbageBytes int
	// ValueLogBufferBytes is how many appended bytes a shard's value log
	// collects in memory before it writes them to its file; it keeps
	// twice that in memory, and reads of those values cost no system
	// call.
	ValueLogBufferBytes int
	// FilterKeys sizes each shard's cuckoo filter (keys per shard); it
	// grows (rebuilt from the data) when it fills up.
	FilterKeys int
	// DirtyBytes bounds the deep buckets a shard keeps modified in memory
	// between checkpoints before it writes them out.
	DirtyBytes int
	// ChangeBufferBytes bounds the memory (estimated: entries, values and
	// bookkeeping) of the changes to deep buckets (entries that flowed
	// down, newer versions, deletions) a store buffers, all shards
	// together, before it applies the largest to their pages; a bucket's
	// changes are applied anyway once they would fill a quarter page.
	ChangeBufferBytes int
	// MemoryBytes is the memory budget of the process that holds the
	// store. The engine's buffers (layer 0, the change buffer, the dirty
	// deep buckets, the value-log buffers) must fit in half of it; per
	// record the engine keeps only its filter entry in memory (README.md,
	// "Memory"). A Checkpoint logs a warning once the live heap passes
	// three quarters of it. Open leaves the process's settings alone: the
	// program that owns the process sets the Go runtime's soft memory
	// limit (debug.SetMemoryLimit, what GOMEMLIMIT sets) to it, so that
	// the garbage collector works harder rather than let the heap double
	// past it (utxostore does, unless the limit is lower already).
	MemoryBytes int
	// CheckpointLogBytes is how many log bytes (all shards together) a
	// Checkpoint lets accumulate before it also takes a page checkpoint
	// (default 256 MiB: after a crash, at a million records, about 5 s of
	// replay for a log of new records and 13 s for one of spends, whose
	// patch records take less log per update; BenchmarkReplay).
	// Below it a Checkpoint only fsyncs the logs. It bounds the log replay
	// after a crash and the disk the logs take; 1 makes every Checkpoint a
	// page checkpoint.
	CheckpointLogBytes int
	// DiscardCorruptLog lets Open drop a log from the write holding a
	// damaged record in its middle onwards instead of refusing to open (a
	// torn tail is always truncated, also one a power loss left with later
	// blocks of an unsynced write on the disk). The damaged write and those
	// after it are lost, acknowledged ones among them; use it to salvage a
	// store whose log was damaged after it was durable.
	DiscardCorruptLog bool
	// ReadOnly opens an existing store without changing any of its files:
	// the log is replayed into memory only (a torn tail is left on disk,
	// unread, and out-of-line values it carries are kept in memory), no
	// page, value, log, checkpoint or manifest is written, truncated or
	// removed, and Close takes no checkpoint. Every write returns
	// engine.ErrReadOnly. The changes the log holds stay in memory, so it
	// takes memory in proportion to the log since the last page
	// checkpoint (at most about CheckpointLogBytes). A directory holding
	// no store is refused (*fsutil.NotClaimedError).
	ReadOnly bool
	// Logger receives recovery reports (a truncated log tail, a rebuilt
	// filter). Nil discards them; they are also in Stats.
	Logger *slog.Logger
}

// DefaultOptions returns the defaults. README.md (this package) has the
// measurements behind them and the commands that produced them. Measured:
// the deep flow ratio (0.9 against 0.75: less disk and write-amp at one
// and ten million records), DirtyBytes (256 MiB bought nothing at ten
// million records for 0.5 GB more memory), fan-out 8 against 4 (4 packs
// ten million records into 25% less disk but ran 15% slower and wrote
// more), Layer0Buckets (2048 per shard against 1024 and 4096 at one
// million), CheckpointLogBytes (256 MiB against 64: write-amp 13.2 against
// 23.8 over 3M ops at one million records, for four times the replay
// after a crash), the shard
// count (at 50k), ValueLogBufferBytes (a write and a read system call per
// value were 18% of the store path's CPU at a million UTXOs), MemoryBytes
// (a heap profile holds about 17 bytes per record beside the buffers).
// Reasoned: 4 KiB layer-0 buckets (one page, the unit a
// page checkpoint writes) keeping half their capacity.
func DefaultOptions() Options {
	return Options{
		Sync:          engine.SyncAlways,
		Shards:        4,
		Layer0Buckets: 2048,
		FanoutBits:    3,
		Layers:        6,
		Capacity:      []int{pagePayload - bucketHeaderMax},
		FlowRatio:     []float64{0.5, 0.9},
		InlineMax:     PageSize / 4,

		ValueLogGarbageBytes: 64 << 20,
		ValueLogBufferBytes:  4 << 20,
		FilterKeys:           1 << 20,
		DirtyBytes:           32 << 20,

		ChangeBufferBytes: 64 << 20,
		MemoryBytes:       2 << 30,

		CheckpointLogBytes: 256 << 20,
	}
}

func (o Options) withDefaults() (Options, error) {
	d := DefaultOptions()
	setting.Default(&o.Shards, d.Shards)
	setting.Default(&o.Layer0Buckets, d.Layer0Buckets)
	setting.Default(&o.FanoutBits, d.FanoutBits)
	setting.Default(&o.Layers, d.Layers)
	setting.Default(&o.Capacity, d.Capacity)
	setting.Default(&o.FlowRatio, d.FlowRatio)
	setting.Default(&o.InlineMax, d.InlineMax)
	setting.Default(&o.ValueLogGarbageBytes, d.ValueLogGarbageBytes)
	setting.Default(&o.ValueLogBufferBytes, d.ValueLogBufferBytes)
	setting.Default(&o.FilterKeys, d.FilterKeys)
	setting.Default(&o.DirtyBytes, d.DirtyBytes)
	setting.Default(&o.ChangeBufferBytes, d.ChangeBufferBytes)
	setting.Default(&o.CheckpointLogBytes, d.CheckpointLogBytes)
	setting.Default(&o.MemoryBytes, d.MemoryBytes)
	if !isPow2(o.Shards) || !isPow2(o.Layer0Buckets) {
		return o, fmt.Errorf("sozu: Shards (%d) and Layer0Buckets (%d) must be powers of two", o.Shards, o.Layer0Buckets)
	}
	if o.Shards > maxShards {
		return o, fmt.Errorf("sozu: Shards (%d) must be at most %d: the log names a record's shard in one byte", o.Shards, maxShards)
	}
	if o.Layers < 2 || o.FanoutBits < 1 {
		return o, fmt.Errorf("sozu: need at least 2 layers and a fan-out of at least 1 bit")
	}
	used := bits.TrailingZeros(uint(o.Shards)) + bits.TrailingZeros(uint(o.Layer0Buckets)) + o.FanoutBits*(o.Layers-1)
	if used > 64 {
		return o, fmt.Errorf("sozu: shards, buckets and layers need %d hash bits, only 64 exist", used)
	}
	if index := used - bits.TrailingZeros(uint(o.Shards)); index > addrIndexBits {
		return o, fmt.Errorf("sozu: the last layer's bucket indexes need %d bits, a bucket address keeps %d: use fewer layers, a smaller fan-out or more shards", index, addrIndexBits)
	}
	for _, a := range o.FlowRatio {
		if a < 0 || a >= 1 {
			return o, fmt.Errorf("sozu: flow ratio %v outside [0,1)", a)
		}
	}
	for _, c := range o.Capacity {
		if c < 64 {
			return o, fmt.Errorf("sozu: capacity %d too small", c)
		}
	}
	if o.InlineMax > PageSize/2 || o.InlineMax < 1 {
		return o, fmt.Errorf("sozu: InlineMax %d must lie in [1, %d]", o.InlineMax, PageSize/2)
	}
	if buffers := o.bufferBytes(); o.MemoryBytes < 2*buffers {
		return o, fmt.Errorf("sozu: the memory budget (%d bytes) must be at least twice the buffers' %d bytes (layer 0, changes, dirty, vlogbuffer): raise it or lower them", o.MemoryBytes, buffers)
	}
	return o, nil
}

// bufferBytes is the memory the engine's buffers may take, all shards
// together: layer 0 (its entries decoded take about twice their encoded
// bytes), the change buffer, the dirty deep buckets, the value-log
// buffers (two per shard) and the write-ahead log's buffer.
func (o Options) bufferBytes() int {
	layer0 := 2 * o.Shards * o.Layer0Buckets * o.capacity(0)
	return layer0 + o.ChangeBufferBytes + o.DirtyBytes + 2*o.Shards*o.ValueLogBufferBytes + logBufferBytes
}

func (o Options) capacity(layer int) int {
	if layer < len(o.Capacity) {
		return o.Capacity[layer]
	}
	return o.Capacity[len(o.Capacity)-1]
}

func (o Options) flowRatio(layer int) float64 {
	if layer < len(o.FlowRatio) {
		return o.FlowRatio[layer]
	}
	return o.FlowRatio[len(o.FlowRatio)-1]
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// MemoryBudget is the memory budget o sets (MemoryBytes), or the default
// one.
func (o Options) MemoryBudget() int {
	setting.Default(&o.MemoryBytes, DefaultOptions().MemoryBytes)
	return o.MemoryBytes
}
