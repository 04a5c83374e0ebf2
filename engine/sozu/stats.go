package sozu

import (
	"context"
	"os"
	"time"
)

// LayerShape is the static shape of one layer.
type LayerShape struct {
	Layer           int
	BucketsPerShard uint64
	Capacity        int     // bytes of entries a bucket holds before it spills
	FlowRatio       float64 // α: the fraction of capacity kept on a spill
	InMemory        bool
	// Summarized: the layer's buckets have summaries in memory, so a
	// lookup of a key stored below reads none of its pages.
	Summarized bool
}

// Shape is the configured shape of the table.
type Shape struct {
	Shards    int
	PageSize  int
	InlineMax int
	Layers    []LayerShape
}

// CheckpointLogBytes is the log, in bytes, past which a block boundary
// takes a page checkpoint and starts the log again (Options, ckptlog): a
// reopen replays at most that much and what was written since the last
// boundary, or, with no boundary for long, unboundedLog.
func (e *Engine) CheckpointLogBytes() int64 { return int64(e.opts.CheckpointLogBytes) }

// Shape returns the table's configured shape.
func (e *Engine) Shape() Shape {
	sh := Shape{Shards: e.opts.Shards, PageSize: PageSize, InlineMax: e.opts.InlineMax}
	for i := 0; i < e.opts.Layers; i++ {
		sh.Layers = append(sh.Layers, LayerShape{
			Layer:           i,
			BucketsPerShard: e.layout.bucketsIn(i),
			Capacity:        e.opts.capacity(i),
			FlowRatio:       e.opts.flowRatio(i),
			InMemory:        i == 0,
			Summarized:      e.layout.summarized(i),
		})
	}
	return sh
}

// LayerStats describes what one layer holds, over all shards.
type LayerStats struct {
	Layer   int
	Entries int64
	Bytes   int64 // encoded entry bytes
	// Buckets is the number of buckets holding at least one entry (buffered
	// changes count once they are applied; Entries and Bytes at once).
	Buckets int64
	// FillRatio is Bytes over the capacity of the non-empty buckets.
	FillRatio float64
	// PageWrites counts the pages written for the layer's buckets since
	// Open.
	PageWrites uint64
}

// Stats is a snapshot for inspection (utxostore inspect) and benchmarks.
type Stats struct {
	Layers []LayerStats
	// Entries counts every record, expired ones not yet purged included.
	Entries int64
	// Descent[n] counts key reads answered after visiting n buckets: the
	// depth histogram.
	Descent []uint64
	// BucketVisits counts buckets visited by reads.
	BucketVisits uint64
	PageReads    uint64
	PageWrites   uint64
	Purged       uint64

	FilterBytes int64
	// SummaryBytes is the memory the bucket summaries take.
	SummaryBytes int64
	// FilterFalsePositiveRate is measured: lookups the filter let through
	// for keys the table then proved absent, over all lookups of absent
	// keys.
	FilterFalsePositiveRate float64

	// BufferedBuckets counts the deep buckets with changes waiting in
	// memory, BufferedMemory the memory those changes take (estimated).
	BufferedBuckets int
	BufferedMemory  int64

	PageFileBytes int64
	// LivePages counts the pages the current buckets take; the rest of the
	// page file is pages free for reuse or kept for the last checkpoint.
	LivePages       int64
	ValueLogBytes   int64
	ValueLogGarbage int64 // bytes no entry points at any more
	// ValueLogCompactions counts the value logs compacted since Open.
	ValueLogCompactions int
	// WALBytes counts the records the log holds: those written since the
	// last page checkpoint, replayed by the next open.
	WALBytes int64
	// LogFileBytes is the size of the log's files on disk. A page
	// checkpoint starts the next log at the start of the same file, which
	// keeps the size the longest log gave it, and under SyncAlways the
	// file grows in zeroed steps ahead of the records: it holds more than
	// WALBytes.
	LogFileBytes int64
	// LogSyncs counts the log's fsyncs since Open: under SyncAlways about
	// one per acknowledged batch, however many shards it touched.
	LogSyncs uint64
	// LogSyncTime is the time those fsyncs took.
	LogSyncTime     time.Duration
	CheckpointBytes int64
	// What the engine wrote since Open, by kind (page bytes are
	// PageWrites·PageSize): the log (every generation's) and the
	// checkpoint files. The device may write less (the OS page cache
	// merges rewrites of a page) or more (file system metadata).
	LogBytesWritten        int64
	CheckpointBytesWritten int64
	// DiskBytes is every file in the data directory.
	DiskBytes int64
	// IndexEntries counts the secondary-index entries held in memory.
	IndexEntries int

	// Recovery reports what Open found in the log.
	Recovery RecoveryReport
}

// Stats gathers the statistics of every shard.
func (e *Engine) Stats(ctx context.Context) (Stats, error) {
	if err := e.enter(ctx); err != nil {
		return Stats{}, err
	}
	defer e.barrier.RUnlock()
	st := Stats{Layers: make([]LayerStats, e.opts.Layers), Descent: make([]uint64, e.opts.Layers+1), Recovery: e.recovery}
	var tn, fp uint64
	for _, s := range e.shards {
		err := s.read(func(s *shard) error {
			t := s.table
			for i, c := range t.layers {
				st.Layers[i].Entries += c.entries
				st.Layers[i].Bytes += c.bytes
				st.Layers[i].Buckets += c.buckets
				st.Layers[i].PageWrites += t.pages.layerWrites[i]
			}
			for i, n := range t.descent {
				st.Descent[i] += n
			}
			st.BucketVisits += t.bucketVisits
			st.PageReads += t.pages.pageReads
			st.PageWrites += t.pages.pageWrites
			st.Purged += t.purged
			st.FilterBytes += t.filter.sizeBytes()
			st.SummaryBytes += t.pages.summaryBytes()
			tn += t.filter.trueNegatives
			fp += t.filter.falsePositives
			st.PageFileBytes += int64(t.pages.npages) * PageSize
			st.LivePages += int64(t.pages.livePages())
			st.BufferedBuckets += len(t.pending)
			st.BufferedMemory += int64(t.pendingMemory)
			st.ValueLogBytes += t.values.size
			st.ValueLogGarbage += t.values.garbage()
			st.ValueLogCompactions += t.compactions
			st.WALBytes += int64(len(s.records.buf))
			st.CheckpointBytesWritten += s.checkpointBytes
			st.IndexEntries += t.indexes.Entries()
			return nil
		})
		if err != nil {
			return st, err
		}
	}
	st.WALBytes += e.log.written()
	st.LogBytesWritten = st.WALBytes - e.logBytesBefore
	st.LogSyncs, st.LogSyncTime = e.log.syncCount()
	for i := range st.Layers {
		l := &st.Layers[i]
		l.Layer = i
		st.Entries += l.Entries
		if l.Buckets > 0 {
			l.FillRatio = float64(l.Bytes) / float64(l.Buckets*int64(e.opts.capacity(i)))
		}
	}
	if tn+fp > 0 {
		st.FilterFalsePositiveRate = float64(fp) / float64(tn+fp)
	}
	files, _ := os.ReadDir(e.dir)
	for _, f := range files {
		if info, err := f.Info(); err == nil {
			st.DiskBytes += info.Size()
			switch {
			case isCheckpointFile(f.Name()):
				st.CheckpointBytes += info.Size()
			case isLogFile(f.Name()):
				st.LogFileBytes += info.Size()
			}
		}
	}
	return st, nil
}
