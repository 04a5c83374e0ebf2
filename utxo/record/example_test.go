package record_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// Every write of the store has this shape: an engine.UpdateFunc that
// decodes the record's current bytes, applies one rule of this package and
// returns the next bytes with their index terms, which the engine applies
// atomically. A refused operation returns its *model.Error and the record
// stays as it was.
func Example() {
	ctx := context.Background()
	eng := memory.New()
	txid, utxoHash := chainhash.Hash{1}, chainhash.Hash{2}
	recs, err := record.Build(record.BuildParams{
		TxID: txid, UtxoHashes: []*chainhash.Hash{&utxoHash}, Tx: []byte{1},
		Version: 1, CurrentHeight: 100, Retention: 288,
	})
	if err != nil {
		panic(err)
	}
	master := recs[0]
	create := func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: master.Encode(), Terms: master.Terms()}, nil
	}
	// spend is the UpdateFunc of a spend of output 0 by spender; sig holds
	// the signals of its last run, which the caller acts on.
	var sig record.Signal
	spend := func(spender model.SpendingData) engine.UpdateFunc {
		return func(current []byte) (engine.Mutation, error) {
			rec, err := record.Decode(current)
			if err != nil {
				return engine.Mutation{}, err
			}
			if sig, err = rec.Spend(0, utxoHash, spender, record.SpendOptions{CurrentHeight: 101, Retention: 288}); err != nil {
				return engine.Mutation{}, err
			}
			return engine.Mutation{Action: engine.Put, Value: rec.Encode(), Terms: rec.Terms()}, nil
		}
	}

	key := engine.Key(record.MasterKey(txid))
	for _, step := range []struct {
		name string
		fn   engine.UpdateFunc
	}{
		{"create", create},
		{"spend by 03…:0", spend(model.SpendingData{TxID: chainhash.Hash{3}})},
		{"spend by 04…:0", spend(model.SpendingData{TxID: chainhash.Hash{4}})},
	} {
		sig = 0
		errs, err := eng.Update(ctx, []engine.Update{{Key: key, Fn: step.fn}})
		if err != nil {
			panic(err)
		}
		var refused *model.Error
		switch {
		case errors.As(errs[0], &refused):
			fmt.Printf("%s: refused, %s\n", step.name, refused.Code)
		case errs[0] != nil:
			panic(errs[0])
		default:
			fmt.Printf("%s: applied, signals %q\n", step.name, sig)
		}
	}
	stored, err := eng.Get(ctx, []engine.Key{key})
	if err != nil {
		panic(err)
	}
	rec, err := record.Decode(stored[0])
	if err != nil {
		panic(err)
	}
	spender, _ := rec.Utxos[0].SpendingData()
	fmt.Printf("output 0 is spent by %x…:%d\n", spender.TxID[:1], spender.Vin)
	// Output:
	// create: applied, signals ""
	// spend by 03…:0: applied, signals "ALLSPENT"
	// spend by 04…:0: refused, SPENT
	// output 0 is spent by 03…:0
}
