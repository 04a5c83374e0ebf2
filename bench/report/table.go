package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/utxostore/utxostore/internal/benchmetric"
)

// WriteTable writes the results as Markdown: one row per engine, then a
// row of ratios per engine against pebble and map. Peak RSS is the
// replay's, then the whole process's, final Summary included.
func WriteTable(w io.Writer, results []*EngineResult) error {
	var b strings.Builder
	b.WriteString("| engine | creates/s | spends/s | set-mined/s | reads/s | create p50/p99 µs | spend p50/p99 µs | connect p50/p99 µs | read p50/p99 µs | " +
		benchmetric.DiskPerMinimalName + " | " + benchmetric.WriteAmpName + " | peak RSS MiB replay / +summary | speed vs pebble | speed vs map | digest |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		if r.Err != "" {
			fmt.Fprintf(&b, "| %s | failed: %s |||||||||||||| |\n", r.Engine, strings.ReplaceAll(r.Err, "|", "/"))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Engine,
			rate(r, Create), rate(r, Spend), rate(r, SetMined), rate(r, Read),
			lat(r, Create), lat(r, Spend), lat(r, SetMined), lat(r, Read),
			ratio(r.DiskPerMinimal), ratio(r.WriteAmp), rss(r),
			ratio(r.VsPebble["store_time"]), ratio(r.VsMap["store_time"]), digestCell(r))
	}
	writeIndexTable(&b, results)
	_, err := io.WriteString(w, b.String())
	return err
}

// indexLegend says what the index table's columns measure.
const indexLegend = `
Address index (bench --index): every block went along the block path, as
import --index takes it (checked, kept in the block store, stored,
indexed), so connect and disconnect above include the path, as does the
write-amp above (every write under the data directory); disk/minimal above
is the store's alone. Below, over the whole
replay, warm-up included: the index's blocks and transactions per second
of index time; its seconds beside the store's (the store's block
connections and disconnections along the path, and the measured
submissions and reads), and their ratio (goal: at most 1), then split
where the measured blocks begin: the warm-up's block connections and
the index's write of what it held from them, and the rest; disk/minimal:
the index's directory ÷ the keys and values of its live entries, "live
MiB" (the logical size of Blockbook's columns and of the Electrum
columns); write-amp: what its Pebble database
wrote (log, flushes, compactions) ÷ the bytes of the batches it committed.
`

// writeIndexTable adds the address index's table when the run fed one.
func writeIndexTable(b *strings.Builder, results []*EngineResult) {
	var rows []*EngineResult
	for _, r := range results {
		if r.Err == "" && r.Index != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString(indexLegend + "\n")
	b.WriteString("| engine | index blocks/s | index txs/s | index s | store s | index ÷ store | warm-up / measured | block store s | index MiB | live MiB | " +
		benchmetric.DiskPerMinimalName + " | " + benchmetric.WriteAmpName + " | index digest |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		ix := r.Index
		d := ix.Digest
		if len(d) > 12 {
			d = d[:12]
		}
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.2f | %.2f | %s | %s / %s | %.2f | %.1f | %.1f | %s | %s | %s |\n", r.Engine,
			ix.BlocksPerSecond, ix.TxsPerSecond, ix.Seconds, ix.StoreSeconds, ratio(ix.PerStore),
			ratio(ix.WarmupPerStore), ratio(ix.MeasuredPerStore), ix.KeepSeconds,
			float64(ix.DiskBytes)/(1<<20), float64(ix.MinimalBytes())/(1<<20), ratio(ix.DiskPerMinimal), ratio(ix.WriteAmp), d)
	}
}

func rss(r *EngineResult) string {
	return fmt.Sprintf("%d / %d", r.ReplayPeakRSSBytes>>20, r.PeakRSSBytes>>20)
}

func rate(r *EngineResult, c Class) string {
	cr, ok := r.Classes[c]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.0f", cr.PerSecond)
}

func lat(r *EngineResult, c Class) string {
	cr, ok := r.Classes[c]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%s / %s", short(cr.P50Micros), short(cr.P99Micros))
}

func short(us float64) string {
	if us >= 100 {
		return fmt.Sprintf("%.0f", us)
	}
	return fmt.Sprintf("%.1f", us)
}

func ratio(x float64) string {
	if x == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}

func digestCell(r *EngineResult) string {
	d := r.Digest
	if len(d) > 12 {
		d = d[:12]
	}
	if r.DigestOK {
		return d + " ✓"
	}
	return d + " ✗ MISMATCH"
}

// WriteSnapshotTable writes, for each engine with a SnapshotResult, the
// rate in coins of the final set per second of the replay that built it
// (warm-up included, and until its statistics reached the tip, as a
// load's have), of the dump and of the load, and how many times the
// replay's rate the dump's and the load's are.
func WriteSnapshotTable(w io.Writer, results []*EngineResult) error {
	var b strings.Builder
	b.WriteString("| engine | coins | file MiB | replay s | dump s | load s | replay coins/s | dump coins/s | load coins/s | dump ÷ replay | load ÷ replay |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		s := r.Snapshot
		if s == nil || r.WallSeconds == 0 || s.DumpSeconds == 0 || s.LoadSeconds == 0 {
			continue
		}
		coins, replaySeconds := float64(s.Coins), r.WallSeconds+r.StatsWaitSeconds
		replay, dump, load := coins/replaySeconds, coins/s.DumpSeconds, coins/s.LoadSeconds
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.1f | %.1f |\n", r.Engine, s.Coins, s.FileBytes>>20,
			replaySeconds, s.DumpSeconds, s.LoadSeconds, replay, dump, load, dump/replay, load/replay)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRecoveryTable writes, for each engine with a RecoveryResult, the
// log its kill left, the reopen's time and replay rate, and the reopen
// the engine's whole log bound would take at that rate.
func WriteRecoveryTable(w io.Writer, results []*EngineResult) error {
	var b strings.Builder
	b.WriteString("| engine | live UTXOs at the kill | log MiB | reopen s | replayed records | replay MiB/s | log bound MiB | reopen at the bound s |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		c := r.Recovery
		if c == nil || c.OpenSeconds == 0 {
			continue
		}
		rate := float64(c.ReplayedBytes) / c.OpenSeconds
		bound := "–"
		if rate > 0 {
			bound = fmt.Sprintf("%.1f", float64(c.CheckpointLogBytes)/rate)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.2f | %d | %.1f | %d | %s |\n", r.Engine, c.LiveUTXOs, float64(c.LogBytes)/(1<<20),
			c.OpenSeconds, c.ReplayedRecords, rate/(1<<20), c.CheckpointLogBytes>>20, bound)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
