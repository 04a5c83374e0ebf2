package report

import "testing"

// The map reference stores nothing: whatever its process happens to write
// is no write amplification, and it has no disk/minimal; the engines do.
func TestDeriveLeavesTheMapWithoutStorageMetrics(t *testing.T) {
	results := []*EngineResult{
		{Engine: "pebble", Digest: "d", DiskBytes: 3000, DeviceWriteBytes: 5000, LogicalBytes: 1000, StoreSeconds: 2},
		{Engine: "map", Digest: "d", DeviceWriteBytes: 4096, LogicalBytes: 1000, StoreSeconds: 1},
	}
	Derive(results, "d", 1000)
	pebble, ref := results[0], results[1]
	if pebble.WriteAmp != 5 || pebble.DiskPerMinimal != 3 || !pebble.DigestOK {
		t.Errorf("pebble: write-amp %v, disk/minimal %v, digest ok %v", pebble.WriteAmp, pebble.DiskPerMinimal, pebble.DigestOK)
	}
	if ref.WriteAmp != 0 || ref.DiskPerMinimal != 0 || !ref.DigestOK {
		t.Errorf("map: write-amp %v, disk/minimal %v, digest ok %v", ref.WriteAmp, ref.DiskPerMinimal, ref.DigestOK)
	}
	if got := pebble.VsMap["store_time"]; got != 0.5 {
		t.Errorf("pebble vs map store time %v, want 0.5", got)
	}
}

// The index's disk/minimal counts, beside Blockbook's columns, the
// Electrum columns its directory holds.
func TestDeriveCountsTheElectrumColumns(t *testing.T) {
	r := &EngineResult{Engine: "sozu", Index: &IndexResult{DiskBytes: 3000, LiveBytes: 1000, ElectrumBytes: 500}}
	Derive([]*EngineResult{r}, "", 0)
	if got := r.Index.DiskPerMinimal; got != 2 {
		t.Errorf("index disk/minimal %v, want 2", got)
	}
}
