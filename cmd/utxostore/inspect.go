package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/utxo"
)

const inspectHelp = `Usage: utxostore inspect [flags] TXID
       utxostore inspect [--json] [flags]    (a sozu store)

With a TXID: shows what the store holds for one transaction: each record
(master and child records of a paginated transaction) with its counters,
flags and heights, the lock record if a create holds or abandoned it,
missing or damaged records, and the external blob files.

Without one, on a store of the sozu engine: the table's live shape: entries and fill
per layer, the depth histogram, the filter's size and measured
false-positive rate, and bytes on disk.

The store is opened read-only: nothing in it changes.

Flags:
`

func runInspect(ctx context.Context, args []string) error {
	fs := newFlagSet("inspect", inspectHelp)
	var sf storeFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "the sozu shape as JSON")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, err := sf.resolve(readStore); err != nil {
		return err
	}
	if fs.NArg() == 0 && sf.engine == sozu.Name {
		o, err := sf.sozuOptions(true)
		if err != nil {
			return err
		}
		if *asJSON {
			return inspectSozuJSON(ctx, sf.data, o, os.Stdout)
		}
		return inspectSozu(ctx, sf.data, o, os.Stdout)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usagef("inspect takes one transaction id")
	}
	txid, err := chainhash.NewHashFromStr(fs.Arg(0))
	if err != nil || len(fs.Arg(0)) != 2*chainhash.HashSize {
		return usagef("%q is not a transaction id: 64 hex digits expected", fs.Arg(0))
	}
	store, err := sf.open(ctx, readStore)
	if err != nil {
		return err
	}
	defer store.Close()
	ins, err := store.Inspect(ctx, *txid)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(ins)
}

func runVerify(ctx context.Context, args []string) error {
	fs := newFlagSet("verify", "Usage: utxostore verify [flags]\n\nChecks that every record decodes with counters matching its outputs, that child\nrecords match their master, that the engine's indexes hold exactly the\nrecords' terms, and that the set's statistics the store keeps (txouts,\ntotal_amount, muhash) are those of a walk of the set. Prints what it checked;\nexits 1 at the first inconsistency, or when the store was stopped inside a\nblock, naming the block to connect again, or when outputs of the set are\nspent by transactions the store does not hold, naming them (never created, or\nof the chain but gone unlisted, which lets a block spend them again). The store is opened read-only:\nnothing in it changes.\n\nFlags:\n")
	var sf storeFlags
	sf.register(fs)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	store, err := sf.open(ctx, readStore)
	if err != nil {
		return err
	}
	defer store.Close()
	rep, err := store.Verify(ctx)
	var partial *utxo.PartialBlockError
	switch {
	case errors.As(err, &partial):
		return err // not damage: the block path's recovery completes it
	case err != nil:
		return fmt.Errorf("the store is inconsistent: %w", err)
	}
	line, _ := json.Marshal(rep)
	fmt.Println(string(line))
	return nil
}
