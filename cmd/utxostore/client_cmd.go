package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

const clientHelp = `Usage: utxostore client [flags] SUBCOMMAND [flags] [ARGS]

Talks to a running 'utxostore serve' over gRPC.

Subcommands:
  health                 engine, network and height of the daemon
  get TXID               the transaction's record (JSON)
  spend TXID:VOUT        the state of one output (JSON)
  import FILE...         send blocks with ConnectBlock (resumes an interrupted import);
                         the last line on stdout is the store's summary, as 'utxostore import' prints it

A daemon serving TLS (serve --tls-cert) is reached with --tls-ca (the CA
file, or the daemon's own certificate when self-signed), --tls-server-name
when the certificate names another host than --server, or --tls alone for a
certificate the system trusts.

Flags:
`

func runClient(ctx context.Context, args []string) error {
	fs := newFlagSet("client", clientHelp)
	addr := fs.String("server", server.DefaultGRPCAddr, "gRPC address of the daemon")
	token := fs.String("token", "", "bearer token for mutating calls")
	startHeight := fs.Uint("start-height", 0, "import: height of the first block of the first file")
	quiet := fs.Bool("quiet", false, "import: no progress on stderr")
	var tlsFlags clientTLS
	tlsFlags.register(fs)
	if err := parseWithArgs(fs, args, "no subcommand given"); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("no subcommand given")
	}
	// The flags may follow the subcommand too: client import --server X FILE.
	sub := fs.Arg(0)
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return err
	}
	rest := fs.Args()
	if sub == "import" {
		if len(rest) == 0 {
			return usagef("import: no block files given")
		}
		return serverImport(ctx, *addr, *token, &tlsFlags, rest, uint32(*startHeight), newBlockProgress(os.Stderr, totalSize(rest), *quiet, 0))
	}
	c, err := dial(*addr, *token, &tlsFlags)
	if err != nil {
		return err
	}
	defer c.Close()
	switch {
	case sub == "health" && len(rest) == 0:
		h, err := c.Info(ctx)
		if err != nil {
			return err
		}
		return printJSON(h)
	case sub == "get" && len(rest) == 1:
		txid, err := chainhash.NewHashFromStr(rest[0])
		if err != nil {
			return usagef("malformed txid %q: %v", rest[0], err)
		}
		meta, err := c.Get(ctx, *txid, utxo.FieldOutputs)
		if err != nil {
			return err
		}
		return printJSON(meta)
	case sub == "spend" && len(rest) == 1:
		txidStr, voutStr, ok := strings.Cut(rest[0], ":")
		txid, err := chainhash.NewHashFromStr(txidStr)
		vout, verr := strconv.ParseUint(voutStr, 10, 32)
		if !ok || err != nil || verr != nil {
			return usagef("want TXID:VOUT, got %q", rest[0])
		}
		resp, err := c.GetSpend(ctx, &utxo.Spend{TxID: *txid, Vout: uint32(vout)})
		if err != nil {
			return err
		}
		return printJSON(map[string]any{"status": resp.Status.String(), "spendingData": resp.SpendingData, "spendableIn": resp.SpendableIn})
	}
	fs.Usage()
	return usagef("unknown subcommand or wrong arguments: %q", fs.Args())
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
