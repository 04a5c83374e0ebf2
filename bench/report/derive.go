package report

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
		if r.DiskBytes > 0 && minimalBytes > 0 {
			r.DiskPerMinimal = float64(r.DiskBytes) / float64(minimalBytes)
		}
		if r.LogicalBytes > 0 {
			r.WriteAmp = float64(r.DeviceWriteBytes) / float64(r.LogicalBytes)
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
