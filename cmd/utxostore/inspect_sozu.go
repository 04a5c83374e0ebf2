package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/sozu"
)

// sozuProbeKeys is how many random keys inspect looks up to measure the
// filter's false-positive rate: the counters Stats keeps start at zero on
// open, and random 32-byte keys are absent with certainty in practice.
const sozuProbeKeys = 100_000

// sozuReport is the live shape of a Sozu store, as inspect prints it.
type sozuReport struct {
	Dir   string     `json:"dir"`
	Shape sozu.Shape `json:"shape"`
	// Layers: entries, encoded bytes, non-empty buckets and fill per layer;
	// DepthShare is the fraction of all records living in that layer (the
	// depth histogram of the records).
	Layers  []sozuLayerReport `json:"layers"`
	Entries int64             `json:"entries"`
	// EncodedBytes is the records' encoded size (key, terms, value or
	// value pointer) over all layers, plus the out-of-line values.
	EncodedBytes            int64   `json:"encodedBytes"`
	FilterBytes             int64   `json:"filterBytes"`
	FilterProbes            int     `json:"filterProbes"`
	FilterFalsePositiveRate float64 `json:"filterFalsePositiveRate"`
	SummaryBytes            int64   `json:"summaryBytes"`
	IndexEntries            int     `json:"indexEntries"`

	// BufferedBuckets and BufferedMemory: deep buckets with changes waiting
	// in memory (replayed from the log at open) and their memory.
	BufferedBuckets int   `json:"bufferedBuckets"`
	BufferedMemory  int64 `json:"bufferedMemory"`
	// LivePages: pages the buckets take; the rest of the page file is free
	// or kept for the last checkpoint.
	LivePages       int64 `json:"livePages"`
	PageFileBytes   int64 `json:"pageFileBytes"`
	ValueLogBytes   int64 `json:"valueLogBytes"`
	ValueLogGarbage int64 `json:"valueLogGarbage"`
	// WALBytes: the log's records (since the last page checkpoint);
	// LogFileBytes: its files on disk, which a log written in place keeps
	// at the size of the longest one.
	WALBytes        int64 `json:"walBytes"`
	LogFileBytes    int64 `json:"logFileBytes"`
	CheckpointBytes int64 `json:"checkpointBytes"`
	DiskBytes       int64 `json:"diskBytes"`
	// DiskPerEncoded is DiskBytes over EncodedBytes: the storage overhead.
	DiskPerEncoded float64 `json:"diskPerEncoded"`

	Recovery sozu.RecoveryReport `json:"recovery"`
}

type sozuLayerReport struct {
	sozu.LayerStats
	DepthShare float64 `json:"depthShare"`
}

// sozuDir finds the engine's directory: DIR/sozu as the store lays it
// out, or DIR itself when it is one.
func sozuDir(dir string) (string, error) {
	for _, d := range []string{filepath.Join(dir, sozu.Name), dir} {
		if _, err := os.Stat(filepath.Join(d, "CHECKPOINT")); err == nil {
			return d, nil
		}
		if m, _ := filepath.Glob(filepath.Join(d, "wal.*")); len(m) > 0 {
			return d, nil
		}
	}
	return "", fmt.Errorf("no Sozu store in %s (nor in %s)", dir, filepath.Join(dir, sozu.Name))
}

// readSozuReport opens the store as o says (read-only for inspect:
// replaying its log into memory and changing nothing), probes the filter
// and gathers Stats.
func readSozuReport(ctx context.Context, dir string, o sozu.Options) (*sozuReport, error) {
	d, err := sozuDir(dir)
	if err != nil {
		return nil, err
	}
	e, err := openSozu(d, o)
	if err != nil {
		return nil, err
	}
	probe := make([]engine.Key, 1000)
	for n := 0; n < sozuProbeKeys; n += len(probe) {
		for i := range probe {
			rand.Read(probe[i][:])
		}
		if _, err := e.Get(ctx, probe); err != nil {
			e.Close()
			return nil, err
		}
	}
	st, err := e.Stats(ctx)
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	r := &sozuReport{
		Dir: d, Shape: e.Shape(), Entries: st.Entries,
		FilterBytes: st.FilterBytes, FilterProbes: sozuProbeKeys, FilterFalsePositiveRate: st.FilterFalsePositiveRate, SummaryBytes: st.SummaryBytes,
		IndexEntries: st.IndexEntries, PageFileBytes: st.PageFileBytes, LivePages: st.LivePages,
		BufferedBuckets: st.BufferedBuckets, BufferedMemory: st.BufferedMemory, ValueLogBytes: st.ValueLogBytes,
		ValueLogGarbage: st.ValueLogGarbage, WALBytes: st.WALBytes, LogFileBytes: st.LogFileBytes, CheckpointBytes: st.CheckpointBytes,
		DiskBytes: st.DiskBytes, Recovery: st.Recovery,
	}
	r.EncodedBytes = st.ValueLogBytes - st.ValueLogGarbage
	for _, l := range st.Layers {
		r.EncodedBytes += l.Bytes
		lr := sozuLayerReport{LayerStats: l}
		if st.Entries > 0 {
			lr.DepthShare = float64(l.Entries) / float64(st.Entries)
		}
		r.Layers = append(r.Layers, lr)
	}
	if r.EncodedBytes > 0 {
		r.DiskPerEncoded = float64(r.DiskBytes) / float64(r.EncodedBytes)
	}
	return r, nil
}

// inspectSozu prints the live shape of the Sozu store under the data
// directory dir as a readable table.
func inspectSozu(ctx context.Context, dir string, o sozu.Options, w io.Writer) error {
	r, err := readSozuReport(ctx, dir, o)
	if err != nil {
		return err
	}
	return r.print(w)
}

// inspectSozuJSON prints the same report as one indented JSON object.
func inspectSozuJSON(ctx context.Context, dir string, o sozu.Options, w io.Writer) error {
	r, err := readSozuReport(ctx, dir, o)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *sozuReport) print(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "Sozu store %s: %d shards, %d-byte pages, values over %d bytes out of line\n\n",
		r.Dir, r.Shape.Shards, r.Shape.PageSize, r.Shape.InlineMax)
	tw := tabwriter.NewWriter(ew, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "layer\tbuckets/shard\tcapacity\tα\tentries\tdepth share\tbytes\tnon-empty buckets\tfill\twhere\t")
	for i, l := range r.Layers {
		s := r.Shape.Layers[i]
		where := "pages"
		switch {
		case s.InMemory:
			where = "memory (+pages)"
		case s.Summarized:
			where = "pages, summarized"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.2f\t%d\t%.1f%%\t%s\t%d\t%.1f%%\t%s\t\n",
			l.Layer, s.BucketsPerShard, s.Capacity, s.FlowRatio, l.Entries, 100*l.DepthShare, byteSize(l.Bytes), l.Buckets, 100*l.FillRatio, where)
	}
	tw.Flush()
	fmt.Fprintf(ew, "\nrecords            %d (%s encoded)\n", r.Entries, byteSize(r.EncodedBytes))
	fmt.Fprintf(ew, "filter             %s, false-positive rate %.4f%% over %d random absent keys\n", byteSize(r.FilterBytes), 100*r.FilterFalsePositiveRate, r.FilterProbes)
	fmt.Fprintf(ew, "summaries          %s (per stored bucket of the summarized layers: key fingerprints, children, height)\n", byteSize(r.SummaryBytes))
	fmt.Fprintf(ew, "index entries      %d (in memory)\n", r.IndexEntries)
	fmt.Fprintf(ew, "on disk            %s = pages %s + value log %s (garbage %s) + log %s (records since the last page checkpoint %s) + checkpoints %s\n",
		byteSize(r.DiskBytes), byteSize(r.PageFileBytes), byteSize(r.ValueLogBytes), byteSize(r.ValueLogGarbage), byteSize(r.LogFileBytes), byteSize(r.WALBytes), byteSize(r.CheckpointBytes))
	fmt.Fprintf(ew, "pages              %d in use of %d in the file (the rest free or kept for the last checkpoint)\n", r.LivePages, r.PageFileBytes/int64(r.Shape.PageSize))
	fmt.Fprintf(ew, "buffered changes   %d buckets, %s in memory\n", r.BufferedBuckets, byteSize(r.BufferedMemory))
	fmt.Fprintf(ew, "disk / encoded     %.2f\n", r.DiskPerEncoded)
	if r.Recovery.DroppedBytes > 0 {
		fmt.Fprintf(ew, "recovery           %s\n", r.Recovery.Detail)
	}
	return ew.err
}

// errWriter keeps the first write error so the printing code stays flat.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	} else if n < len(p) {
		e.err = errors.New("short write")
	}
	return len(p), nil
}

func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
