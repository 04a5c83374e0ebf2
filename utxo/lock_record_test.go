package utxo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// bigTx builds a transaction spending parent's output 0 into n outputs with
// scripts of scriptSize bytes.
func bigTx(tag string, parent wire.OutPoint, n, scriptSize int) *chain.Tx {
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(&wire.TxIn{PreviousOutPoint: parent, SignatureScript: []byte(tag), Sequence: 0xffffffff})
	for i := 0; i < n; i++ {
		s := make([]byte, scriptSize)
		copy(s, fmt.Sprintf("%s/%d", tag, i))
		msg.AddTxOut(&wire.TxOut{Value: 1, PkScript: s})
	}
	return chain.NewTx(msg)
}

func rawRecord(t *testing.T, db *DB, txid chainhash.Hash, index uint32) *record.Record {
	t.Helper()
	values, err := db.eng.Get(ctx, []engine.Key{engine.Key(record.RecordKey(txid, index))})
	if err != nil {
		t.Fatal(err)
	}
	if values[0] == nil {
		return nil
	}
	r, err := record.Decode(values[0])
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPaginationOfFortyFiveThousandOutputs(t *testing.T) {
	testPaginationOfFortyFiveThousandOutputs(t, onMemory)
}

func testPaginationOfFortyFiveThousandOutputs(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	tx := bigTx("45k", wire.OutPoint{Hash: chainhash.Hash{1}}, 45000, 25)
	mustCreate(t, db, tx, 10)

	type want struct {
		utxos, recordUtxos, totalUtxos, totalExtraRecs int
	}
	for i, w := range []want{{20000, 20000, 45000, 2}, {20000, 20000, 0, 0}, {5000, 5000, 0, 0}} {
		r := rawRecord(t, db, tx.ID, uint32(i))
		if r == nil {
			t.Fatalf("record %d missing", i)
		}
		got := want{len(r.Utxos), int(r.RecordUtxos), int(r.TotalUtxos), int(r.TotalExtraRecs)}
		if got != w || r.SpentUtxos != 0 || r.SpentExtraRecs != 0 || r.Creating || r.TxID != tx.ID {
			t.Fatalf("record %d: %+v spent %d spentExtra %d creating %v, want %+v", i, got, r.SpentUtxos, r.SpentExtraRecs, r.Creating, w)
		}
		if i == 0 && (!r.External || r.Tx != nil) {
			t.Fatalf("master: external %v, %d tx bytes; a paginated transaction lives in the blob store", r.External, len(r.Tx))
		}
	}
	if r := rawRecord(t, db, tx.ID, 3); r != nil {
		t.Fatal("a fourth record exists")
	}
	raw, err := db.opts.Blobs.Get(ctx, tx.ID, blob.FileTypeTx)
	if err != nil || len(raw) != len(tx.Raw) {
		t.Fatalf("blob: %d bytes, %v", len(raw), err)
	}
	m := mustGet(t, db, tx.ID)
	if len(m.Outputs) != 45000 || m.Records != 3 || m.Tx == nil || m.Tx.ID != tx.ID {
		t.Fatalf("Get combined %d outputs over %d records", len(m.Outputs), m.Records)
	}
}

// roundTrip creates tx, spends and unspends outputs in every record, and
// deletes it.
func roundTrip(t *testing.T, db *DB, tx *chain.Tx) {
	t.Helper()
	mustCreate(t, db, tx, 5, mined(5))
	n := uint32(len(tx.Msg.TxOut))
	vouts := []uint32{0, n / 2, n - 1}
	var from []wire.OutPoint
	for _, v := range vouts {
		from = append(from, out(tx, v))
	}
	spender := spendTx("spender", from, 1, 1)
	if _, err := db.Spend(ctx, spender); err != nil {
		t.Fatal(err)
	}
	m := mustGet(t, db, tx.ID)
	for vin, v := range vouts {
		sd := m.Outputs[v].SpendingData
		if sd == nil || sd.TxID != spender.ID || sd.Vin != uint32(vin) {
			t.Fatalf("output %d: spending data %v", v, sd)
		}
	}
	if m.Tx == nil || m.Tx.ID != tx.ID || len(m.Tx.Raw) != len(tx.Raw) {
		t.Fatal("Get did not return the transaction")
	}
	spends, _ := spendsOf(spender, nil)
	if err := db.Unspend(ctx, spends, false); err != nil {
		t.Fatal(err)
	}
	for _, v := range vouts {
		if sd := mustGet(t, db, tx.ID).Outputs[v].SpendingData; sd != nil {
			t.Fatalf("output %d still spent after unspend", v)
		}
	}
	if err := db.Delete(ctx, tx.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(ctx, tx.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	for i := uint32(0); i < uint32(record.NumRecords(int(n), db.opts.UtxoBatchSize)); i++ {
		if rawRecord(t, db, tx.ID, i) != nil {
			t.Fatalf("record %d left after delete", i)
		}
	}
	if _, err := db.opts.Blobs.Get(ctx, tx.ID, blob.FileTypeTx); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("blob left after delete: %v", err)
	}
}

func TestHundredThousandOutputsRoundTrip(t *testing.T) {
	roundTrip(t, newStore(t, Options{}), bigTx("100k", wire.OutPoint{Hash: chainhash.Hash{2}}, 100_001, 25))
}

func TestFiveMegabyteTransactionRoundTrip(t *testing.T) {
	tx := bigTx("5mb", wire.OutPoint{Hash: chainhash.Hash{3}}, 50, 100_000)
	if len(tx.Raw) < 5_000_000 {
		t.Fatalf("test transaction is only %d bytes", len(tx.Raw))
	}
	roundTrip(t, newStore(t, Options{}), tx)
}

// assertNothingSpendable checks that no output of tx can be spent.
func assertNothingSpendable(t *testing.T, db *DB, tx *chain.Tx) {
	t.Helper()
	n := uint32(len(tx.Msg.TxOut))
	for _, v := range []uint32{0, n / 2, n - 1} {
		spender := spendTx(fmt.Sprint("early", v), []wire.OutPoint{out(tx, v)}, 1, 1)
		_, err := db.Spend(ctx, spender, IgnoreLocked())
		if !errors.Is(err, model.ErrUtxoLocked) && !errors.Is(err, model.ErrTxNotFound) {
			t.Fatalf("output %d of an unfinished create: spend gave %v, want UTXO_LOCKED or TX_NOT_FOUND", v, err)
		}
	}
}

func TestCreateFaultInjection(t *testing.T) { testCreateFaultInjection(t, onMemory) }

func testCreateFaultInjection(t *testing.T, open engineOpener) {
	fail := errors.New("injected fault")
	steps := map[string]func(f *faults){
		"after the lock":       func(f *faults) { f.afterLock = func() error { return fail } },
		"after the blob write": func(f *faults) { f.afterBlob = func() error { return fail } },
		"after 1 of 3 records": func(f *faults) { f.afterRecords = failAt(1, fail) },
		"after 2 of 3 records": func(f *faults) { f.afterRecords = failAt(2, fail) },
		"after the children are cleared, before the master": func(f *faults) { f.beforeMasterCleared = func() error { return fail } },
	}
	sizes := []struct {
		outputs, batchSize int
	}{
		{250, 100},  // three small records
		{45_000, 0}, // three records of the default size
	}
	for _, size := range sizes {
		for name, inject := range steps {
			t.Run(fmt.Sprintf("%d outputs/%s", size.outputs, name), func(t *testing.T) {
				db := newStoreOn(t, open, Options{UtxoBatchSize: size.batchSize})
				tx := bigTx("faulty", wire.OutPoint{Hash: chainhash.Hash{4}}, size.outputs, 10)
				last := uint32(size.outputs - 1)
				inject(&db.faults)
				if _, err := db.Create(ctx, tx, 7); !errors.Is(err, fail) {
					t.Fatalf("create with a fault %s: %v", name, err)
				}
				assertNothingSpendable(t, db, tx)
				mustVerify(t, db)
				if m, err := db.Get(ctx, tx.ID); err == nil && !m.Creating {
					t.Fatal("Get reports an unfinished transaction as complete")
				}
				db.faults = faults{}
				if _, err := db.Create(ctx, tx, 7); err != nil {
					t.Fatalf("retry after a fault %s: %v", name, err)
				}
				m := mustGet(t, db, tx.ID)
				if m.Creating || len(m.Outputs) != size.outputs || m.Records != 3 {
					t.Fatalf("after the retry: creating %v, %d outputs, %d records", m.Creating, len(m.Outputs), m.Records)
				}
				mustVerify(t, db)
				spender := spendTx("after", []wire.OutPoint{out(tx, 0), out(tx, last)}, 1, 1)
				if _, err := db.Spend(ctx, spender); err != nil {
					t.Fatalf("spend after the retry: %v", err)
				}
				if _, err := db.Create(ctx, tx, 7); !errors.Is(err, model.ErrTxExists) {
					t.Fatalf("creating a committed transaction again: %v, want TX_EXISTS", err)
				}
			})
		}
	}
}

func failAt(k int, err error) func(int) error {
	return func(written int) error {
		if written == k {
			return err
		}
		return nil
	}
}

func TestSetMinedCompletesAnInterruptedCreate(t *testing.T) {
	testSetMinedCompletesAnInterruptedCreate(t, onMemory)
}

func testSetMinedCompletesAnInterruptedCreate(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{UtxoBatchSize: 100})
	tx := bigTx("mined", wire.OutPoint{Hash: chainhash.Hash{5}}, 250, 10)
	db.faults.beforeMasterCleared = func() error { return errors.New("crash") }
	if _, err := db.Create(ctx, tx, 7); err == nil {
		t.Fatal("fault not injected")
	}
	db.faults = faults{}
	if _, err := db.SetMinedMulti(ctx, []chainhash.Hash{tx.ID}, model.MinedBlockInfo{BlockID: 1, BlockHeight: 8, OnLongestChain: true}); err != nil {
		t.Fatal(err)
	}
	for i := uint32(0); i < 3; i++ {
		if rawRecord(t, db, tx.ID, i).Creating {
			t.Fatalf("record %d still creating after SetMinedMulti", i)
		}
	}
	if _, err := db.Spend(ctx, spendTx("s", []wire.OutPoint{out(tx, 120)}, 1, 1)); err != nil {
		t.Fatal(err)
	}
}

func TestBlobFailureLeavesNoRecords(t *testing.T) {
	dir := t.TempDir()
	bs, _ := blob.NewFileStore(dir)
	db := newStore(t, Options{Blobs: brokenBlobs{bs}, ExternalizeAllTransactions: true})
	tx := spendTx("ext", []wire.OutPoint{{Hash: chainhash.Hash{6}}}, 3, 1)
	_, err := db.Create(ctx, tx, 1)
	wantCode(t, err, model.ErrStorage)
	if rawRecord(t, db, tx.ID, 0) != nil {
		t.Fatal("a record exists after the blob store failed")
	}
	if v, _ := db.eng.Get(ctx, []engine.Key{engine.Key(record.LockKey(tx.ID))}); v[0] != nil {
		t.Fatal("the lock record was not released")
	}
}

type brokenBlobs struct{ blob.Store }

func (brokenBlobs) Put(_ context.Context, txid chainhash.Hash, ft blob.FileType, data []byte) error {
	return errors.New("disk full")
}

func TestConcurrentCreateGetsTxExists(t *testing.T) { testConcurrentCreateGetsTxExists(t, onMemory) }

func testConcurrentCreateGetsTxExists(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{UtxoBatchSize: 100})
	tx := bigTx("race", wire.OutPoint{Hash: chainhash.Hash{7}}, 250, 10)
	inside, release := make(chan struct{}), make(chan struct{})
	db.faults.afterBlob = func() error {
		close(inside)
		<-release
		return nil
	}
	done := make(chan error)
	go func() {
		_, err := db.Create(ctx, tx, 1)
		done <- err
	}()
	<-inside
	db.faults.afterBlob = nil // the second create must not block
	_, err := db.Create(ctx, tx, 1)
	wantCode(t, err, model.ErrTxExists)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the first create: %v", err)
	}
	if m := mustGet(t, db, tx.ID); m.Creating {
		t.Fatal("still creating")
	}
}

func TestAbandonedLockExpires(t *testing.T) { testAbandonedLockExpires(t, onMemory) }

func testAbandonedLockExpires(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{UtxoBatchSize: 100})
	tx := bigTx("abandoned", wire.OutPoint{Hash: chainhash.Hash{8}}, 250, 10)
	// A process that crashed while holding the lock leaves it behind; its
	// time to live is what frees it.
	lock := newLockRecord(time.Now(), 3)
	if err := db.eng.CreateOnly(ctx, engine.Key(record.LockKey(tx.ID)), lock.encode(), time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := db.Create(ctx, tx, 1)
	wantCode(t, err, model.ErrTxExists)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := db.Create(ctx, tx, 1)
		if err == nil {
			break
		}
		if !errors.Is(err, model.ErrTxExists) || time.Now().After(deadline) {
			t.Fatalf("create after the lock's time to live: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := mustGet(t, db, tx.ID); m.Creating || len(m.Outputs) != 250 {
		t.Fatal("create after the lock expired did not complete")
	}
}

func TestDAHRemovesEveryRecordAndTheBlobOnly(t *testing.T) {
	testDAHRemovesEveryRecordAndTheBlobOnly(t, onMemory)
}

func testDAHRemovesEveryRecordAndTheBlobOnly(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{UtxoBatchSize: 100, BlockHeightRetention: 5})
	big := bigTx("dah", wire.OutPoint{Hash: chainhash.Hash{9}}, 250, 10)
	other := spendTx("other", []wire.OutPoint{{Hash: chainhash.Hash{10}}}, 2, 1)
	mustCreate(t, db, big, 10, mined(10))
	mustCreate(t, db, other, 10, mined(10))
	var all []wire.OutPoint
	for v := range big.Msg.TxOut {
		all = append(all, out(big, uint32(v)))
	}
	if err := db.SetBlockHeight(ctx, 11); err != nil {
		t.Fatal(err)
	}
	spender := spendTx("all", all, 1, 1)
	if _, err := db.Spend(ctx, spender, WithBlockHeight(11)); err != nil {
		t.Fatal(err)
	}
	master := rawRecord(t, db, big.ID, 0)
	if master.DeleteAtHeight != 16 || master.SpentExtraRecs != 2 {
		t.Fatalf("master after spending everything: DAH %d, spentExtraRecs %d", master.DeleteAtHeight, master.SpentExtraRecs)
	}
	for i := uint32(1); i < 3; i++ {
		if c := rawRecord(t, db, big.ID, i); c.DeleteAtHeight != 16 {
			t.Fatalf("child %d DAH %d, want the master's 16", i, c.DeleteAtHeight)
		}
	}
	if res, err := db.Prune(ctx, 15); err != nil || res.Records != 0 {
		t.Fatalf("prune before the DAH: %+v %v", res, err)
	}
	res, err := db.Prune(ctx, 16)
	if err != nil || res.Records != 3 || res.Blobs < 1 {
		t.Fatalf("prune at the DAH: %+v %v", res, err)
	}
	for i := uint32(0); i < 3; i++ {
		if rawRecord(t, db, big.ID, i) != nil {
			t.Fatalf("record %d survived", i)
		}
	}
	if _, err := db.opts.Blobs.Get(ctx, big.ID, blob.FileTypeTx); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("blob survived: %v", err)
	}
	if m := mustGet(t, db, other.ID); len(m.Outputs) != 2 {
		t.Fatal("an unrelated transaction was touched")
	}

	// Unspending one output before the DAH cancels it on every record.
	db2 := newStoreOn(t, open, Options{UtxoBatchSize: 100, BlockHeightRetention: 5})
	mustCreate(t, db2, big, 10, mined(10))
	if _, err := db2.Spend(ctx, spender, WithBlockHeight(11)); err != nil {
		t.Fatal(err)
	}
	spends, _ := spendsOf(spender, nil)
	if err := db2.Unspend(ctx, spends[240:241], false); err != nil {
		t.Fatal(err)
	}
	for i := uint32(0); i < 3; i++ {
		if r := rawRecord(t, db2, big.ID, i); r.DeleteAtHeight != 0 {
			t.Fatalf("record %d keeps DAH %d after an unspend", i, r.DeleteAtHeight)
		}
	}
}

// countingBlobs counts reads of the blob store.
type countingBlobs struct {
	blob.Store
	gets int
}

func (c *countingBlobs) Get(ctx context.Context, txid chainhash.Hash, ft blob.FileType) ([]byte, error) {
	c.gets++
	return c.Store.Get(ctx, txid, ft)
}

func TestExternalTransactionCache(t *testing.T) {
	bs, _ := blob.NewFileStore(t.TempDir())
	counting := &countingBlobs{Store: bs}
	db := newStore(t, Options{Blobs: counting, ExternalizeAllTransactions: true})
	many := spendTx("many", []wire.OutPoint{{Hash: chainhash.Hash{0x31}}}, 3, 1)
	one := spendTx("one", []wire.OutPoint{{Hash: chainhash.Hash{0x32}}}, 1, 1)
	mustCreate(t, db, many, 1, mined(1))
	mustCreate(t, db, one, 1, mined(1))
	for i := 0; i < 3; i++ {
		mustGet(t, db, many.ID)
		mustGet(t, db, one.ID)
	}
	// many (3 active outputs) is read from the blob store once and then
	// cached; one (a single active output) is not worth caching.
	if counting.gets != 1+3 {
		t.Fatalf("%d blob reads, want 4", counting.gets)
	}
	// Spending down to one active output drops it from the cache.
	spender := spendTx("spend2", []wire.OutPoint{out(many, 0), out(many, 1)}, 1, 1)
	if _, err := db.Spend(ctx, spender); err != nil {
		t.Fatal(err)
	}
	before := counting.gets
	mustGet(t, db, many.ID) // served from the cache, then dropped: 1 active output
	mustGet(t, db, many.ID)
	if counting.gets != before+1 {
		t.Fatalf("%d blob reads after the spend, want 1", counting.gets-before)
	}
}

// TestExternalRetrievalFallsBackToOutputs: an external transaction whose
// .tx file is absent is read from its .outputs file (a UTXOWrapper).
func TestExternalRetrievalFallsBackToOutputs(t *testing.T) {
	db := newStore(t, Options{ExternalizeAllTransactions: true})
	tx := spendTx("wrapped", []wire.OutPoint{{Hash: chainhash.Hash{0x41}}}, 3, 7)
	mustCreate(t, db, tx, 2, mined(2))
	if err := db.opts.Blobs.Delete(ctx, tx.ID, blob.FileTypeTx); err != nil {
		t.Fatal(err)
	}
	// With neither file the read fails with a storage error, not a panic.
	_, err := db.Get(ctx, tx.ID)
	wantCode(t, err, model.ErrStorage)

	wrapper := record.UTXOWrapper{TxID: tx.ID, Height: 2}
	for vout, o := range tx.Msg.TxOut {
		wrapper.UTXOs = append(wrapper.UTXOs, record.WrappedUTXO{Index: uint32(vout), Value: uint64(o.Value), Script: o.PkScript})
	}
	raw, err := wrapper.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.opts.Blobs.Put(ctx, tx.ID, blob.FileTypeOutputs, raw); err != nil {
		t.Fatal(err)
	}
	m := mustGet(t, db, tx.ID)
	if m.Tx == nil || len(m.Tx.Msg.TxOut) != 3 {
		t.Fatalf("transaction from the .outputs file: %+v", m.Tx)
	}
	for vout, o := range m.Tx.Msg.TxOut {
		if o.Value != 7 || !bytes.Equal(o.PkScript, tx.Msg.TxOut[vout].PkScript) {
			t.Fatalf("output %d: %d %x", vout, o.Value, o.PkScript)
		}
	}
	if s := summary(t, db); s.Utxos != 3 || s.Satoshis != 21 {
		t.Fatalf("summary over the .outputs file: %+v", s)
	}
}
