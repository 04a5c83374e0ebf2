package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/utxostore/utxostore/server"
)

// FuzzElectrumRequest: whatever line a client sends the daemon's Electrum
// listener, each answer it gets is JSON, and the connection goes on
// serving: a ping sent after the line is answered. A line the daemon
// cannot parse, a parameter of the wrong type or size, or a method it
// does not know must be answered with an error, never crash the daemon,
// stall the connection or close it.
func FuzzElectrumRequest(f *testing.F) {
	srv, blocks := indexedDaemon(f, 3, server.Options{})
	script := blocks[1].Txs[0].Msg.TxOut[0].PkScript
	sum := sha256.Sum256(script)
	slices.Reverse(sum[:])
	scripthash := hex.EncodeToString(sum[:])
	txid := blocks[1].Txs[0].ID.String()
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["fuzz","1.4"]}`,
		`{"id":2,"method":"blockchain.scripthash.get_history","params":["` + scripthash + `"]}`,
		`{"id":3,"method":"blockchain.scripthash.get_balance","params":{"scripthash":"` + scripthash + `"}}`,
		`{"id":4,"method":"blockchain.scripthash.listunspent","params":["` + scripthash + `"]}`,
		`{"id":5,"method":"blockchain.scripthash.subscribe","params":["` + scripthash + `"]}`,
		`{"id":6,"method":"blockchain.transaction.get","params":["` + txid + `",true]}`,
		`{"id":7,"method":"blockchain.transaction.get_merkle","params":["` + txid + `",1]}`,
		`{"id":8,"method":"blockchain.block.header","params":[1,2]}`,
		`{"id":9,"method":"blockchain.block.headers","params":[0,3]}`,
		`{"id":10,"method":"blockchain.transaction.broadcast","params":["0100"]}`,
		`{"id":11,"method":"blockchain.estimatefee","params":[6]}`,
		`{"id":12,"method":"blockchain.transaction.id_from_pos","params":[1,0,true]}`,
		`[{"id":13,"method":"server.ping"},{"method":"server.ping"}]`,
		`{"method":"blockchain.headers.subscribe"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		// One line: the protocol ends a request at a newline.
		line = bytes.ReplaceAll(line, []byte("\n"), []byte(" "))
		c, r := dialElectrum(t, srv, 30*time.Second)
		const probe = `"fuzz-probe"`
		if _, err := fmt.Fprintf(c, "%s\n{\"id\":%s,\"method\":\"server.ping\"}\n", line, probe); err != nil {
			t.Fatal(err)
		}
		for {
			answer, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("after %q, no answer to the ping that followed it: %v", line, err)
			}
			if !json.Valid(answer) {
				t.Fatalf("after %q, an answer that is not JSON: %.300s", line, answer)
			}
			var a struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(answer, &a) == nil && string(a.ID) == probe {
				return
			}
		}
	})
}
