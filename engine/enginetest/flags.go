package enginetest

import "flag"

// Flags are the command-line settings of the long tests and of
// BenchCreateSpendMix. This package registers none itself: a library that
// did would impose them on every binary that links it. An engine's test
// package registers them once and hands them to the suite:
//
//	var flags = enginetest.RegisterFlags(flag.CommandLine)
//
// so that one command line runs several engines side by side:
//
//	UTXOSTORE_BENCH_LIVE=200000 go test -run '^$' -bench CreateSpendMix -benchtime 200000x ./engine/sozu ./engine/pebble -args -sync block
type Flags struct {
	// Long turns on the long differential and crash runs.
	Long bool
	// Live, Batch, ..., Clients are BenchCreateSpendMix's settings (see
	// RegisterFlags for each).
	Live, Batch          int
	Sync, Dir            string
	Profile, HeapProfile string
	Young                int
	Ages                 string
	Clients              int

	set *flag.FlagSet // where they were registered, to tell which were given
}

// RegisterFlags registers the settings on fs and returns them.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{set: fs}
	fs.BoolVar(&f.Long, "long", false, "run the long differential and crash tests")
	fs.IntVar(&f.Live, "live", 0, "live records loaded before BenchmarkCreateSpendMix measures (default: env UTXOSTORE_BENCH_LIVE, else the engine's own: 200000 for pebble and sozu, 50000 for redis)")
	fs.IntVar(&f.Batch, "batch", 64, "updates per Update call in BenchmarkCreateSpendMix")
	fs.StringVar(&f.Sync, "sync", "always", "sync mode of BenchmarkCreateSpendMix: always or block (engines that run in this process: pebble, sozu)")
	fs.StringVar(&f.Dir, "benchdir", "", "directory for BenchmarkCreateSpendMix's store (default: a temporary one; engines that run in this process: pebble, sozu)")
	// -test.cpuprofile would also profile the load, which at ten million
	// records takes longer than the timed phase.
	fs.StringVar(&f.Profile, "mixprofile", "", "write a CPU profile of BenchmarkCreateSpendMix's timed phase (not the load) to this file")
	fs.StringVar(&f.HeapProfile, "mixheapprofile", "", "write a heap profile of the engine as BenchmarkCreateSpendMix's timed phase ends to this file")
	fs.IntVar(&f.Young, "young", 0, "percent of BenchmarkCreateSpendMix's spends that pick among the records the mix created in the last 100 blocks, the rest picking any live record (default 0: every spend picks any live record)")
	fs.StringVar(&f.Ages, "ages", "uniform", "how BenchmarkCreateSpendMix's spends pick the record they spend: uniform (any live record alike) or lindy (the age rank among the live records drawn log-uniformly, newest first, as in utxostore bench's synthetic chain: half the spends take the newest √n records)")
	fs.IntVar(&f.Clients, "clients", 1, "Update calls BenchmarkCreateSpendMix keeps in flight at once, as that many callers would (a block boundary waits for all of them); with more than one, a record created in a call becomes spendable once that call returns")
	return f
}

// defaultFlags are the settings when no flag was registered.
func defaultFlags() *Flags {
	return RegisterFlags(flag.NewFlagSet("enginetest", flag.ContinueOnError))
}

// given reports whether the flag name was set on the command line.
func (f *Flags) given(name string) bool {
	given := false
	f.set.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	return given
}

// DifferentialOps is the number of operations of a differential run:
// 20,000, or a million with -long.
func (f *Flags) DifferentialOps() int {
	if f.Long {
		return 1_000_000
	}
	return 20_000
}
