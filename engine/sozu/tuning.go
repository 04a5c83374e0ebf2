package sozu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TuningHelp lists the settings ParseTuning reads, for command-line help.
const TuningHelp = "shards, b0 (layer-0 buckets per shard), fanout (bits per layer), layers, " +
	"cap0 and cap (bucket capacity in bytes: layer 0, deeper layers), " +
	"alpha0, alpha1 and alpha (flow ratio α: layer 0, layer 1, deeper layers), " +
	"inline (largest value kept in a bucket), vloggarbage (value-log garbage bytes that allow a compaction), vlogbuffer (value-log bytes collected per write), filter (filter keys per shard), " +
	"ckptlog (log bytes between page checkpoints), memory (the process's memory budget in bytes, which utxostore makes the Go memory limit), dirty (bytes of modified deep buckets kept in memory), " +
	"changes (bytes of buffered changes); shards, b0, fanout and layers are the store's layout and must match it"

// TuningError is a tuning setting ParseTuning cannot take.
type TuningError struct {
	Setting string // the name=value as given
	Reason  string
}

func (e *TuningError) Error() string {
	return fmt.Sprintf("sozu tuning %q: %s (settings: %s)", e.Setting, e.Reason, TuningHelp)
}

// ParseTuning reads a tuning spec of comma-separated name=value settings
// (TuningHelp lists them), e.g. "shards=8,alpha=0.75,changes=128MiB",
// into Options whose other fields keep their defaults. An empty spec is
// the defaults. The result is checked as Open checks it, so a bad value is
// refused here, before any store is touched.
func ParseTuning(spec string) (Options, error) {
	var o Options
	if strings.TrimSpace(spec) == "" {
		return o, nil
	}
	d := DefaultOptions()
	c0, c := d.Capacity[0], d.Capacity[len(d.Capacity)-1]
	a0, a := d.FlowRatio[0], d.FlowRatio[len(d.FlowRatio)-1]
	a1 := -1.0 // layer 1's α when set apart from the deeper layers
	ints := map[string]*int{
		"shards": &o.Shards, "b0": &o.Layer0Buckets, "fanout": &o.FanoutBits, "layers": &o.Layers,
		"cap0": &c0, "cap": &c, "inline": &o.InlineMax, "vloggarbage": &o.ValueLogGarbageBytes, "vlogbuffer": &o.ValueLogBufferBytes, "filter": &o.FilterKeys,
		"ckptlog": &o.CheckpointLogBytes, "dirty": &o.DirtyBytes, "changes": &o.ChangeBufferBytes, "memory": &o.MemoryBytes,
	}
	ratios := map[string]*float64{"alpha0": &a0, "alpha1": &a1, "alpha": &a}
	seen := make(map[string]bool)
	for _, setting := range strings.Split(spec, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(setting), "=")
		switch {
		case !ok:
			return Options{}, &TuningError{setting, "want name=value"}
		case seen[name]:
			return Options{}, &TuningError{setting, "set twice"}
		case ints[name] != nil:
			n, err := parseCount(name, value)
			if err != nil || n <= 0 {
				return Options{}, &TuningError{setting, "want a positive whole number (of bytes, a KiB, MiB or GiB suffix allowed, for a size)"}
			}
			*ints[name] = n
		case ratios[name] != nil:
			r, err := strconv.ParseFloat(value, 64)
			if err != nil || r < 0 || r >= 1 {
				return Options{}, &TuningError{setting, "want a ratio in [0, 1)"}
			}
			*ratios[name] = r
		default:
			return Options{}, &TuningError{setting, "unknown setting"}
		}
		seen[name] = true
	}
	o.Capacity, o.FlowRatio = []int{c0, c}, []float64{a0, a}
	if a1 >= 0 {
		o.FlowRatio = []float64{a0, a1, a}
	}
	if _, err := o.withDefaults(); err != nil {
		return Options{}, &TuningError{spec, strings.TrimPrefix(err.Error(), "sozu: ")}
	}
	return o, nil
}

// counts are the settings that are not sizes in bytes.
var counts = map[string]bool{"shards": true, "b0": true, "fanout": true, "layers": true, "filter": true}

// sizeUnits are the suffixes a size in bytes may carry.
var sizeUnits = []struct {
	suffix string
	bytes  int
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}}

// parseCount reads a setting's whole number; the settings in bytes (all
// but shards, b0, fanout, layers and filter) take a binary unit suffix.
func parseCount(name, value string) (int, error) {
	unit := 1
	if !counts[name] {
		for _, u := range sizeUnits {
			if v, ok := strings.CutSuffix(value, u.suffix); ok {
				value, unit = v, u.bytes
				break
			}
		}
	}
	n, err := strconv.Atoi(value)
	if err != nil || n > math.MaxInt/unit {
		return 0, fmt.Errorf("not a whole number: %q", value)
	}
	return n * unit, nil
}
