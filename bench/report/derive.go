package report

import "github.com/utxostore/utxostore/internal/benchmetric"

// Derive fills the cross-engine fields: digest agreement with the
// reference digest, disk bytes per minimal byte, write amplification, and
// throughput ratios to pebble and to map (engine ÷ reference, per class,
// plus "store_time": reference store seconds ÷ engine's, so that above 1
// is faster everywhere).
func Derive(results []*EngineResult, refDigest string, minimalBytes uint64) {
	byName := map[string]*EngineResult{}
	for _, r := range results {
		byName[r.Engine] = r
		r.DigestOK = r.Err == "" && r.Digest == refDigest
		if r.Engine == "map" {
			continue // no storage: its process's few writes are not the set's
		}
		r.DiskPerMinimal = benchmetric.DiskPerMinimal(r.DiskBytes, int64(minimalBytes))
		r.WriteAmp = benchmetric.WriteAmp(r.DeviceWriteBytes, r.LogicalBytes)
		if ix := r.Index; ix != nil {
			ix.derive()
		}
	}
	for _, r := range results {
		r.VsPebble = ratios(r, byName["pebble"])
		r.VsMap = ratios(r, byName["map"])
	}
}

func ratios(r, ref *EngineResult) map[string]float64 {
	if ref == nil || ref.Err != "" || r.Err != "" {
		return nil
	}
	out := map[string]float64{}
	for c, cr := range r.Classes {
		if rc, ok := ref.Classes[c]; ok && rc.PerSecond > 0 {
			out[string(c)] = cr.PerSecond / rc.PerSecond
		}
	}
	if r.StoreSeconds > 0 {
		out["store_time"] = ref.StoreSeconds / r.StoreSeconds
	}
	return out
}

func (ix *IndexResult) derive() {
	if ix.Seconds > 0 {
		ix.BlocksPerSecond, ix.TxsPerSecond = float64(ix.Blocks)/ix.Seconds, float64(ix.Txs)/ix.Seconds
	}
	if ix.StoreSeconds > 0 {
		ix.PerStore = ix.Seconds / ix.StoreSeconds
	}
	if ix.WarmupStoreSeconds > 0 {
		ix.WarmupPerStore = ix.WarmupSeconds / ix.WarmupStoreSeconds
	}
	if measuredStore := ix.StoreSeconds - ix.WarmupStoreSeconds; measuredStore > 0 {
		ix.MeasuredPerStore = (ix.Seconds - ix.WarmupSeconds) / measuredStore
	}
	ix.DiskPerMinimal = benchmetric.DiskPerMinimal(ix.DiskBytes, int64(ix.MinimalBytes()))
	ix.WriteAmp = benchmetric.WriteAmp(int64(ix.WrittenBytes), int64(ix.CommittedBytes))
}

// MinimalBytes is the index's minimal live data: the keys and values of
// every column it keeps, Blockbook's and the Electrum columns.
func (ix *IndexResult) MinimalBytes() uint64 { return ix.LiveBytes + ix.ElectrumBytes }
