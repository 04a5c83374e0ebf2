package sozu

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseTuning(t *testing.T) {
	o, err := ParseTuning("shards=8, b0=1024,alpha1=0.5,alpha=0.75,changes=1048576")
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultOptions()
	if o.Shards != 8 || o.Layer0Buckets != 1024 || o.ChangeBufferBytes != 1<<20 ||
		!slices.Equal(o.FlowRatio, []float64{d.FlowRatio[0], 0.5, 0.75}) || !slices.Equal(o.Capacity, []int{d.Capacity[0], d.Capacity[0]}) {
		t.Fatalf("parsed %+v", o)
	}
	if o.Layers != 0 || o.DirtyBytes != 0 {
		t.Fatalf("settings not given must keep their defaults (zero): %+v", o)
	}
	// A size takes a binary unit; a count does not.
	if o, err := ParseTuning("memory=1GiB,changes=64MiB,dirty=512KiB"); err != nil || o.MemoryBytes != 1<<30 || o.ChangeBufferBytes != 64<<20 || o.DirtyBytes != 512<<10 {
		t.Fatalf("sizes with units: %+v, %v", o, err)
	}
	if o, err := ParseTuning(""); err != nil || o.Shards != 0 || o.FlowRatio != nil {
		t.Fatalf("an empty spec: %+v, %v", o, err)
	}

	for spec, want := range map[string]string{
		"shards":                                "want name=value",
		"shards=3":                              "powers of two",
		"shards=-4":                             "positive whole number",
		"shards=256":                            "at most 128",
		"alpha=1":                               "ratio in [0, 1)",
		"alpha=abc":                             "ratio in [0, 1)",
		"pagesize=8192":                         "unknown setting",
		"shards=4,shards=8":                     "set twice",
		"inline=4000":                           "InlineMax",
		"layers=40":                             "hash bits",
		"shards=1,b0=1048576,fanout=8,layers=6": "bucket address keeps 56",
		"memory=268435456":                      "at least twice the buffers",
		"shards=1KiB":                           "positive whole number",
		"memory=1GB":                            "positive whole number",
	} {
		_, err := ParseTuning(spec)
		var te *TuningError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTuning(%q) = %v, want a *TuningError saying %q", spec, err, want)
		}
	}
}
