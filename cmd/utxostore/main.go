// Command utxostore is the UTXO database's command line: import blocks,
// inspect and serve a store, and benchmark the engines.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{
	"import":   {"replay blocks from blk*.dat or raw block files into a store", runImport},
	"info":     {"print the store's summary line (the same JSON object import ends with)", runInfo},
	"inspect":  {"show a transaction's records, lock record, external blob and flags", runInspect},
	"verify":   {"check the store's consistency: records, counters, child records, indexes", runVerify},
	"bench":    {"replay one workload on every engine and a Go map; compare speed, size and digests", runBench},
	"sync":     {"follow a Bitcoin node over the P2P protocol: blocks, reorgs, its mempool", runSync},
	"serve":    {"serve the store over gRPC and HTTP (Blockbook-shaped API, metrics, health)", runServe},
	"config":   {"print the effective serve configuration and where each value came from", runConfig},
	"client":   {"talk to a running daemon over gRPC (health, get, spend, import)", runClient},
	"demo":     {"build a small synthetic chain in a temporary store and serve it", runDemo},
	"backup":   {"have a running daemon copy its whole data directory, at one block, while it serves", runBackup},
	"snapshot": {"the UTXO set as a file: dump, load (Bitcoin Core's and Teranode's formats), Teranode's block diffs", runSnapshot},
}

// newFlagSet is a command's flag set, whose usage is help followed by the
// flags and their defaults.
func newFlagSet(name, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), help); fs.PrintDefaults() }
	return fs
}

func main() {
	os.Exit(mainWithCode(os.Args[1:]))
}

func mainWithCode(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "utxostore: unknown command %q\n\n", args[0])
		usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "utxostore %s: %v\n", args[0], err)
		var m mistake
		if errors.As(err, &m) {
			return 2
		}
		return 1
	}
	return 0
}

func usage() {
	fmt.Fprintln(os.Stderr, "utxostore: a UTXO database for Bitcoin-family nodes\n\nUsage: utxostore COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'utxostore COMMAND -h' for a command's flags.")
}

// mistake is an error that running the command again differently fixes:
// a mistake on the command line, or a data directory other than the one
// it expects (exit status 2).
type mistake interface {
	error
	commandLineMistake()
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func (*usageError) commandLineMistake() {}

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}
