package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/sozu"
)

func TestInspectSozu(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	e, err := sozu.Open(filepath.Join(data, sozu.Name), sozu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	batch := make([]engine.Update, n)
	for i := range batch {
		var k engine.Key
		binary.BigEndian.PutUint64(k[:8], uint64(i)*0x9E3779B97F4A7C15)
		batch[i] = engine.Update{Key: k, Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: make([]byte, 120), Terms: engine.Terms{ProducedAt: 7}}, nil
		}}
	}
	if _, err := e.Update(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	var table bytes.Buffer
	if err := inspectSozu(ctx, data, &table); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	for _, want := range []string{"layer", "fill", "records            3000", "false-positive rate", "disk / encoded", "in use of", "buffered changes"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	var js bytes.Buffer
	if err := inspectSozuJSON(ctx, data, &js); err != nil {
		t.Fatal(err)
	}
	var r sozuReport
	if err := json.Unmarshal(js.Bytes(), &r); err != nil {
		t.Fatalf("%v in %s", err, js.String())
	}
	if r.Entries != n || len(r.Layers) != len(r.Shape.Layers) || r.DiskBytes == 0 || r.FilterProbes == 0 {
		t.Errorf("report %+v", r)
	}
	if r.LivePages == 0 || r.LivePages*int64(r.Shape.PageSize) > r.PageFileBytes {
		t.Errorf("%d pages in use in a page file of %d bytes", r.LivePages, r.PageFileBytes)
	}
	if r.Layers[0].DepthShare <= 0 || r.FilterFalsePositiveRate > 0.05 {
		t.Errorf("depth share %v, false-positive rate %v", r.Layers[0].DepthShare, r.FilterFalsePositiveRate)
	}

	if err := inspectSozu(ctx, t.TempDir(), &table); err == nil {
		t.Error("an empty directory was inspected without error")
	}
}
