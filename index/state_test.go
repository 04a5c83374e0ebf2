package index

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
)

// rawState reads the stored internalState JSON without the package.
func rawState(t *testing.T, dir string) map[string]any {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val, closer, err := db.Get(append([]byte{0}, "internalState"...))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	m := map[string]any{}
	if err := json.Unmarshal(val, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// editState rewrites the stored internalState JSON.
func editState(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	m := rawState(t, dir)
	edit(m)
	val, _ := json.Marshal(m)
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set(append([]byte{0}, "internalState"...), val, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

func TestInternalStateFields(t *testing.T) {
	dir := t.TempDir()
	ix := openTest(t, dir, Options{Coin: "Bitcoin"})
	connectAll(t, ix, goldenChain())
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	m := rawState(t, dir)
	if m["coin"] != "Bitcoin" || m["dbState"] != float64(0) || m["bestHeight"] != float64(1) {
		t.Fatalf("state %v", m)
	}
	cols := m["dbColumns"].([]any)
	var names []string
	for _, c := range cols {
		c := c.(map[string]any)
		if c["version"] != float64(5) {
			t.Fatalf("column %v", c)
		}
		names = append(names, c["name"].(string))
	}
	if got := strings.Join(names, ","); got != "default,height,addresses,blockTxs,transactions,fiatRates,addressBalance,txAddresses" {
		t.Fatalf("columns %s", got)
	}
}

func TestOpenRefuses(t *testing.T) {
	newClosed := func() string {
		dir := t.TempDir()
		ix := openTest(t, dir, Options{})
		connectAll(t, ix, goldenChain())
		ix.Close()
		return dir
	}

	dir := newClosed()
	_, err := Open(dir, Options{Coin: "Litecoin"})
	var se *StateError
	if !errors.Is(err, ErrCoinMismatch) || !errors.As(err, &se) || !strings.Contains(err.Error(), "rebuild") {
		t.Fatalf("coin mismatch: %v", err)
	}

	dir = newClosed()
	editState(t, dir, func(m map[string]any) {
		m["dbColumns"].([]any)[2].(map[string]any)["version"] = 4
	})
	if _, err := Open(dir, Options{Coin: "Bitcoin"}); !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("version: %v", err)
	}

	// An index built when pay-to-pubkey outputs were keyed by their script.
	dir = newClosed()
	editState(t, dir, func(m map[string]any) { delete(m, "p2pkAsP2pkh") })
	if _, err := Open(dir, Options{Coin: "Bitcoin"}); !errors.Is(err, ErrVersionMismatch) || !strings.Contains(err.Error(), "pay-to-pubkey") {
		t.Fatalf("P2PK keyed by script: %v", err)
	}

	dir = newClosed()
	ix := openTest(t, dir, Options{})
	if err := ix.MarkInconsistent(); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if _, err := Open(dir, Options{Coin: "Bitcoin"}); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("inconsistent: %v", err)
	}

	// A crash leaves dbState open: reported, accepted, or refused on request.
	dir = newClosed()
	ix = openTest(t, dir, Options{})
	if ix.UncleanShutdown() {
		t.Fatal("clean close reported as unclean")
	}
	ix.db.Close() // the process dies without Close
	if _, err := Open(dir, Options{Coin: "Bitcoin", RefuseUnclean: true}); !errors.Is(err, ErrUncleanShutdown) {
		t.Fatalf("unclean, refused: %v", err)
	}
	ix = openTest(t, dir, Options{})
	if !ix.UncleanShutdown() {
		t.Fatal("unclean shutdown not reported")
	}
	if bi, ok, err := ix.BestBlock(); err != nil || !ok || bi.Height != 1 {
		t.Fatalf("after unclean shutdown: %+v %v %v", bi, ok, err)
	}
	ix.Close()

	if _, err := Open(t.TempDir(), Options{}); err == nil {
		t.Fatal("Open without a coin")
	}
}
