package chain

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/internal/testdata"
)

// Facts from ../shared/data/README.md, checked here against the data.
const (
	btcBlocks = 14132
	btcTxs    = 14247
)

var bsvTxCounts = []int{485, 564, 901, 1356}

// bsvBlockFiles returns the four raw BSV mainnet blocks, keyed by the hash
// in their file name.
func bsvBlockFiles(t testing.TB) map[string]string {
	t.Helper()
	dir := testdata.Path(t, "bsv-mainnet")
	paths, err := filepath.Glob(filepath.Join(dir, "*.bin"))
	if err != nil || len(paths) == 0 {
		t.Skipf("skipping: no raw blocks in %s", dir)
	}
	files := make(map[string]string, len(paths))
	for _, p := range paths {
		files[strings.TrimSuffix(filepath.Base(p), ".bin")] = p
	}
	return files
}

// efFile returns the Extended Format transaction's hex file and its txid.
func efFile(t testing.TB) (path, txid string) {
	t.Helper()
	dir := testdata.Path(t, "bsv-mainnet")
	paths, _ := filepath.Glob(filepath.Join(dir, "*.ef.hex"))
	if len(paths) != 1 {
		t.Skipf("skipping: want one .ef.hex file in %s, found %d", dir, len(paths))
	}
	return paths[0], strings.TrimSuffix(filepath.Base(paths[0]), ".ef.hex")
}

func readEF(t testing.TB) (raw []byte, txid string) {
	t.Helper()
	path, txid := efFile(t)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err = hex.DecodeString(strings.TrimSpace(string(text)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return raw, txid
}

// btcdPaddedFile locates btcd's zero-padded copy of the Bitcoin blocks in
// the module cache.
func btcdPaddedFile(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/btcsuite/btcd").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("skipping: cannot locate the btcd module with go list: %v", err)
	}
	path := filepath.Join(dir, "blockchain", "testdata", "blk_0_to_14131.dat")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("skipping: btcd's padded block file is not in the module cache: %v", err)
	}
	return path
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// doubleSHA256 is computed with crypto/sha256 directly so that tests do not
// check the package's hashing with itself.
func doubleSHA256(b []byte) [32]byte {
	first := sha256.Sum256(b)
	return sha256.Sum256(first[:])
}

func sortedInts(m map[string]int) []int {
	var s []int
	for _, v := range m {
		s = append(s, v)
	}
	sort.Ints(s)
	return s
}
