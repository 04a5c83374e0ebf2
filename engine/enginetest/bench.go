package enginetest

import (
	"context"
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/utxostore/utxostore/bench/report"
	"github.com/utxostore/utxostore/bench/sysstat"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/agerank"
)

// The flags of BenchmarkCreateSpendMix. They live here, not in the engines'
// tests, because every engine's test binary links this package: a flag
// defined both here and in an engine would panic at init, and one command
// line must run several engines side by side:
//
//	UTXOSTORE_BENCH_LIVE=200000 go test -run '^$' -bench CreateSpendMix -benchtime 200000x ./engine/sozu ./engine/pebble -args -sync block
var (
	benchLive  = flag.Int("live", 0, "live records loaded before BenchmarkCreateSpendMix measures (default: env UTXOSTORE_BENCH_LIVE, else the engine's own: 200000 for pebble and sozu, 50000 for redis)")
	benchBatch = flag.Int("batch", 64, "updates per Update call in BenchmarkCreateSpendMix")
	benchSync  = flag.String("sync", "always", "sync mode of BenchmarkCreateSpendMix: always or block (engines that run in this process: pebble, sozu)")
	benchDir   = flag.String("benchdir", "", "directory for BenchmarkCreateSpendMix's store (default: a temporary one; engines that run in this process: pebble, sozu)")
	// -test.cpuprofile would also profile the load, which at ten million
	// records takes longer than the timed phase.
	benchProfile = flag.String("mixprofile", "", "write a CPU profile of BenchmarkCreateSpendMix's timed phase (not the load) to this file")
	benchYoung   = flag.Int("young", 0, "percent of BenchmarkCreateSpendMix's spends that pick among the records the mix created in the last 100 blocks, the rest picking any live record (default 0: every spend picks any live record)")
	benchAges    = flag.String("ages", "uniform", "how BenchmarkCreateSpendMix's spends pick the record they spend: uniform (any live record alike) or lindy (the age rank among the live records drawn log-uniformly, newest first, as in utxostore bench's synthetic chain: half the spends take the newest √n records)")
	benchHeap    = flag.String("mixheapprofile", "", "write a heap profile of the engine as BenchmarkCreateSpendMix's timed phase ends to this file")
	benchClients = flag.Int("clients", 1, "Update calls BenchmarkCreateSpendMix keeps in flight at once, as that many callers would (a block boundary waits for all of them); with more than one, a record created in a call becomes spendable once that call returns")
)

// BenchLive is the number of live records a benchmark loads: -live, else
// UTXOSTORE_BENCH_LIVE, else def (an environment variable as well as a
// flag, so one go test command over several packages can set it).
func BenchLive(def int) int {
	if *benchLive > 0 {
		return *benchLive
	}
	if n, err := strconv.Atoi(os.Getenv("UTXOSTORE_BENCH_LIVE")); err == nil && n > 0 {
		return n
	}
	return def
}

// A benchmark record is shaped like a UTXO record: a header of transaction
// metadata followed by one 32-byte hash per unspent output; spending an
// output appends its 36 bytes of spending data (txid and input index), so
// a spend changes 36..68 bytes. Values are 100..300 bytes.
const (
	benchOutputSize  = 32
	benchSpendSize   = 36
	benchBlockOps    = 1000 // ops per simulated block
	benchRetention   = 10   // blocks a fully spent record waits before pruning
	benchCreateShare = 22   // percent of ops that create: about one create per 3.5 spends keeps the live count steady
	benchYoungBlocks = 100  // how recent a record -young spends is
)

// benchRecord draws a record produced at height: byte 0 counts its outputs,
// byte 1 the spent ones, bytes 2..5 hold the height (a UTXO record keeps
// the heights of the blocks that mined it).
func benchRecord(rng *rand.Rand, height uint32) ([]byte, engine.Terms) {
	header := 60 + rng.IntN(80)
	outputs := 1 + rng.IntN(5)
	v := make([]byte, 2+header+outputs*benchOutputSize)
	v[0], v[1] = byte(outputs), 0 // outputs, spent so far
	for i := 6; i < len(v); i++ {
		v[i] = byte(rng.Uint32())
	}
	binary.LittleEndian.PutUint32(v[2:6], height)
	return v, engine.Terms{ProducedAt: height}
}

// benchSpend spends the next unspent output; a record whose last output is
// spent becomes deletable after the retention, as the UTXO store's DAH does.
// The record keeps its production height: spending does not mine it again.
func benchSpend(height uint32) engine.UpdateFunc {
	return func(cur []byte) (engine.Mutation, error) {
		if cur == nil || cur[1] >= cur[0] {
			return engine.Mutation{Action: engine.Keep}, nil
		}
		next := append(cur, make([]byte, benchSpendSize)...)
		binary.LittleEndian.PutUint32(next[len(next)-4:], uint32(cur[1]))
		next[1]++
		terms := engine.Terms{ProducedAt: binary.LittleEndian.Uint32(next[2:6])}
		if next[1] == next[0] {
			terms.DeleteAtHeight, terms.Consumed = height+benchRetention, true
		}
		return engine.Mutation{Action: engine.Put, Value: next, Terms: terms}, nil
	}
}

// BenchKey is the key of the benchmark's i-th record: spread over the key
// space by a multiplicative hash, and unique by its last four bytes.
func BenchKey(i uint32) engine.Key {
	var k engine.Key
	binary.BigEndian.PutUint64(k[:8], uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint32(k[28:], i)
	return k
}

// BenchLoad writes n records of the benchmark's shape under BenchKey(0)
// .. BenchKey(n-1), batch updates per Update call, the i-th produced at
// height(i), drawing them from rng.
func BenchLoad(b testing.TB, e engine.Engine, rng *rand.Rand, n, batch int, height func(i uint32) uint32) {
	benchLoad(b, e, rng, n, batch, height, nil)
}

// benchLoad is BenchLoad telling each record to each, if set.
func benchLoad(b testing.TB, e engine.Engine, rng *rand.Rand, n, size int, height func(i uint32) uint32, each func(i uint32, v []byte)) {
	for next := uint32(0); int(next) < n; {
		batch := make([]engine.Update, 0, size)
		for ; len(batch) < cap(batch) && int(next) < n; next++ {
			v, terms := benchRecord(rng, height(next))
			batch = append(batch, engine.Update{Key: BenchKey(next), Fn: put(v, terms)})
			if each != nil {
				each(next, v)
			}
		}
		benchApply(b, e, batch)
	}
}

func benchApply(b testing.TB, e engine.Engine, batch []engine.Update) {
	if err := applyBatch(e, batch); err != nil {
		b.Fatal(err)
	}
}

// applyBatch applies batch and returns the first error, the call's or an
// update's.
func applyBatch(e engine.Engine, batch []engine.Update) error {
	errs, err := e.Update(context.Background(), batch)
	if err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// benchPrune deletes the records whose delete-at-height has come, as the
// store's pruner does at each block.
func benchPrune(b testing.TB, e engine.Engine, height uint32) {
	var keys []engine.Key
	err := e.Scan(context.Background(), engine.ByDeleteAtHeight, 1, height, func(k engine.Key, _ uint32) error {
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Delete(context.Background(), keys); err != nil {
		b.Fatal(err)
	}
}

// BenchHarness tells BenchCreateSpendMix how to open an engine and what the
// engine adds to the shared workload and metrics.
type BenchHarness[E engine.Engine] struct {
	// Open opens the engine over dir under mode; the engine's errors fail
	// b. A second Open of the same dir (after Close) reopens the store.
	// Engines without a directory (Redis) use dir to name their key space
	// and may ignore mode.
	Open func(b *testing.B, dir string, mode engine.SyncMode) E
	// Live is the engine's default number of live records, used when
	// neither -live nor UTXOSTORE_BENCH_LIVE is set.
	Live int
	// LoadBatch is the updates per Update call while loading (default
	// 10,000).
	LoadBatch int
	// Local engines run in this process over a directory. For them the
	// load runs under SyncBlock and the engine is reopened under -sync
	// before the timed phase (the load is not what is measured, and
	// under SyncAlways it would take far longer), -benchdir applies, and
	// write-amp and peak-RSS-MB are reported: for a remote engine they
	// would measure the client only.
	Local bool
	// DiskBytes, if set, is the bytes the store takes on disk, reported
	// per live record (disk-B/live) and per live record over the mean
	// value size (disk/value).
	DiskBytes func(b *testing.B, e E) int64
	// Block, if set, ends each simulated block after its prune, in place
	// of the default e.Checkpoint(ctx, height).
	Block func(b *testing.B, e E, height uint32)
	// Report, if set, reports the engine's own metrics once the timed
	// phase is over.
	Report func(b *testing.B, e E)
}

// BenchCreateSpendMix loads -live records, then measures b.N random
// creates and spends in batches of -batch (a spend takes any live record
// alike, or one of a log-uniform age rank with -ages lindy, or a young
// one for -young percent of the spends); at each simulated block of 1000
// ops it deletes the records whose DAH came (as the store's pruner does)
// and checkpoints (or runs h.Block). It reports ops/s and the live count,
// for a local engine the bytes the device wrote over the logical bytes
// (write-amp: value+key for a create, spend data+key for a spend) and the
// peak RSS, and then, untimed by the framework, the keys/s of batched
// reads of old and of fresh records (benchReadOldVsFresh).
//
// Use -benchtime Nx: the load is not timed but still takes minutes at
// large sizes, so the framework's first b.N=1 probe returns at once instead
// of loading a store for one op.
func BenchCreateSpendMix[E engine.Engine](b *testing.B, h BenchHarness[E]) {
	if b.N == 1 {
		return
	}
	mode, err := engine.ParseSyncMode(*benchSync)
	if err != nil {
		b.Fatal(err)
	}
	if *benchYoung < 0 || *benchYoung > 100 {
		b.Fatalf("-young %d: a percentage lies in [0, 100]", *benchYoung)
	}
	if *benchAges != "uniform" && *benchAges != "lindy" {
		b.Fatalf("-ages %q: uniform or lindy", *benchAges)
	}
	if *benchAges == "lindy" && *benchYoung > 0 {
		b.Fatalf("-young applies to -ages uniform: with -ages lindy the age distribution already decides how many spends are young")
	}
	if *benchClients < 1 || *benchClients > 1024 {
		b.Fatalf("-clients %d: between 1 and 1024 calls in flight", *benchClients)
	}
	dir := b.TempDir()
	if !h.Local {
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "sync" || f.Name == "benchdir" {
				b.Logf("-%s does not apply to this engine: ignored", f.Name)
			}
		})
	} else if *benchDir != "" {
		dir = *benchDir
	}
	loadBatch := h.LoadBatch
	if loadBatch == 0 {
		loadBatch = 10_000
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))

	loadStart := time.Now()
	loadMode := mode
	if h.Local {
		loadMode = engine.SyncBlock
	}
	e := h.Open(b, dir, loadMode)
	// The benchmark's own bookkeeping: the records with unspent outputs,
	// and each record's count of them and value size (per record ever
	// created); with -young or -ages lindy also each record's place in live
	// and what the picker needs (spendPicker).
	var live []uint32
	var unspent []uint8
	var size []uint16
	var valueBytes int64
	picker := newSpendPicker(*benchYoung, *benchAges == "lindy")
	benchLoad(b, e, rng, BenchLive(h.Live), loadBatch, func(uint32) uint32 { return 1 }, func(i uint32, v []byte) {
		valueBytes += int64(len(v))
		picker.added(i, len(live))
		live = append(live, i)
		unspent = append(unspent, v[0])
		size = append(size, uint16(len(v)))
	})
	loaded := int64(len(live))
	var reopen time.Duration
	if h.Local {
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		// Opening a store of this size is what a restart costs (an
		// engine may rebuild what it keeps in memory from the data).
		openStart := time.Now()
		e = h.Open(b, dir, mode)
		reopen = time.Since(openStart)
	}
	defer e.Close()
	b.Logf("loaded %d records in %v", loaded, time.Since(loadStart).Round(time.Second))
	if picker.young > 0 {
		b.Logf("%d%% of the spends pick among the records created in the last %d blocks", picker.young, benchYoungBlocks)
	}
	if picker.lindy {
		b.Logf("spends draw the age rank of the record they spend log-uniformly over the live records")
	}

	height := uint32(2)
	nextKey := uint32(len(live))
	// logical counts what each op means (a create's value and key, a
	// spend's spending data and key); versions what it hands the engine
	// (the key and the record's new value).
	var logical, versions int64
	var dirtiedBefore, deviceBefore int64
	deviceOK := false
	if h.Local {
		dirtiedBefore = procWriteBytes(b)
		deviceBefore, deviceOK = sysstat.DeviceWrites(dir)
	}
	// spendable makes record i one a spend may pick.
	spendable := func(i uint32) {
		picker.added(i, len(live))
		picker.created(i)
		live = append(live, i)
	}
	// Each Update call's time: a store that does its upkeep in bursts
	// (writing out what it buffered) makes some callers wait for it.
	calls := &callsInFlight{limit: *benchClients}
	stopProfile := startProfile(b)
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		n := min(*benchBatch, b.N-done)
		batch := make([]engine.Update, 0, n)
		var created []uint32
		for len(batch) < n {
			if rng.IntN(100) < benchCreateShare || len(live) == 0 {
				v, terms := benchRecord(rng, height)
				logical += int64(len(v)) + engine.KeySize
				versions += int64(len(v)) + engine.KeySize
				batch = append(batch, engine.Update{Key: BenchKey(nextKey), Fn: put(v, terms)})
				// One caller may spend in a call what it creates in
				// the same call; callers in parallel may not spend a
				// record before the call creating it has returned.
				if calls.limit == 1 {
					spendable(nextKey)
				} else {
					created = append(created, nextKey)
				}
				unspent = append(unspent, v[0])
				size = append(size, uint16(len(v)))
				nextKey++
				continue
			}
			p, ok := picker.pick(rng, unspent)
			if !ok {
				p = rng.IntN(len(live))
			}
			i := live[p]
			if unspent[i]--; unspent[i] == 0 {
				live[p] = live[len(live)-1]
				picker.moved(live[p], p)
				live = live[:len(live)-1]
				picker.spent(i)
			}
			size[i] += benchSpendSize
			logical += benchSpendSize + engine.KeySize
			versions += int64(size[i]) + engine.KeySize
			batch = append(batch, engine.Update{Key: BenchKey(i), Fn: benchSpend(height)})
		}
		if err := calls.send(e, batch, created, spendable); err != nil {
			b.Fatal(err)
		}
		done += n
		if done/benchBlockOps != (done-n)/benchBlockOps {
			// A block ends once all its transactions are in.
			if err := calls.wait(0, spendable); err != nil {
				b.Fatal(err)
			}
			height++
			benchPrune(b, e, height)
			if h.Block != nil {
				h.Block(b, e, height)
			} else if err := e.Checkpoint(ctx, height); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := calls.wait(0, spendable); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stopProfile()
	writeHeapProfile(b)

	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(calls.times.Quantile(0.99).Microseconds())/1000, "call-p99-ms")
	b.ReportMetric(float64(calls.times.Max().Microseconds())/1000, "call-max-ms")
	b.ReportMetric(float64(len(live)), "live")
	if h.Local {
		if logical > 0 {
			// What the device wrote, where it can be read (see
			// sysstat.DeviceWrites for why write_bytes is not that);
			// write_bytes, what the process dirtied, as well.
			dirtied := float64(procWriteBytes(b) - dirtiedBefore)
			device := dirtied
			if deviceAfter, ok := sysstat.DeviceWrites(dir); ok && deviceOK {
				device = float64(deviceAfter - deviceBefore)
			}
			b.ReportMetric(device/float64(logical), "write-amp")
			b.ReportMetric(device/float64(b.N), "device-B/op")
			b.ReportMetric(dirtied/float64(b.N), "dirtied-B/op")
			// The write-amp of a store that writes each op's outcome
			// once, nothing else: what logging the new record versions
			// costs before any table is kept.
			b.ReportMetric(float64(versions)/float64(logical), "versions-amp")
		}
		b.ReportMetric(reopen.Seconds(), "reopen-s")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MB")
		// The peak may come from the load; this is the steady state.
		b.ReportMetric(float64(currentRSS())/(1<<20), "end-RSS-MB")
	}
	if h.DiskBytes != nil {
		disk := float64(h.DiskBytes(b, e))
		avgValue := float64(valueBytes) / float64(loaded)
		b.ReportMetric(disk/float64(len(live))/avgValue, "disk/value")
		// The disk/value of a store that keeps the live records' keys
		// and values and nothing else.
		var records int64
		for _, i := range live {
			records += int64(size[i]) + engine.KeySize
		}
		b.ReportMetric(float64(records)/float64(len(live))/avgValue, "records/value")
		// The disk per live record over its own encoded size (its key
		// and current value): the other reading of "bytes on disk per
		// live record over its encoded size", whose floor is 1.
		b.ReportMetric(disk/float64(records), "disk/record")
		b.ReportMetric(disk/float64(len(live)), "disk-B/live")
	}
	if h.Report != nil {
		h.Report(b, e)
	}
	benchReadOldVsFresh(b, e, rng, live, uint32(loaded))
}

// callsInFlight runs the mix's Update calls, up to limit at once, and
// times each. Calls return in any order but are taken back in the order
// they were sent, so the records they created become spendable in key
// order (spendPicker needs it).
type callsInFlight struct {
	limit   int
	pending []inFlightCall
	mu      sync.Mutex
	times   report.Hist
}

type inFlightCall struct {
	done    chan error
	created []uint32
}

// send waits until fewer than limit calls are in flight, then starts one
// applying batch; created are the records it creates.
func (c *callsInFlight) send(e engine.Engine, batch []engine.Update, created []uint32, spendable func(uint32)) error {
	if err := c.wait(c.limit-1, spendable); err != nil {
		return err
	}
	call := inFlightCall{done: make(chan error, 1), created: created}
	c.pending = append(c.pending, call)
	go func() {
		start := time.Now()
		err := applyBatch(e, batch)
		c.mu.Lock()
		c.times.Record(time.Since(start))
		c.mu.Unlock()
		call.done <- err
	}()
	if c.limit == 1 {
		return c.wait(0, spendable)
	}
	return nil
}

// wait takes back the oldest calls until at most n are in flight, making
// what they created spendable.
func (c *callsInFlight) wait(n int, spendable func(uint32)) error {
	for len(c.pending) > n {
		call := c.pending[0]
		c.pending = c.pending[1:]
		if err := <-call.done; err != nil {
			return err
		}
		for _, i := range call.created {
			spendable(i)
		}
	}
	return nil
}

// startProfile starts the CPU profile -mixprofile asks for and returns
// what stops it.
func startProfile(b *testing.B) (stop func()) {
	if *benchProfile == "" {
		return func() {}
	}
	f, err := os.Create(*benchProfile)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatalf("-mixprofile: %v (-test.cpuprofile already profiles the whole run)", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// writeHeapProfile writes the heap profile -mixheapprofile asks for.
func writeHeapProfile(b *testing.B) {
	if *benchHeap == "" {
		return
	}
	f, err := os.Create(*benchHeap)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC() // the profile shows the heap as of the last GC
	err = pprof.WriteHeapProfile(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
}

// spendPicker serves -young and -ages lindy: it chooses the record a
// spend takes when the choice is not uniform over live. It knows where each
// record sits in live, the records created in the last benchYoungBlocks (a
// ring, for -young) and, for -ages lindy, the live records in creation
// order (slot i of ages is record i: records are added in key order). With
// neither it does nothing and draws no random numbers, so the workload
// stays the default one.
type spendPicker struct {
	young  int  // percent of spends that pick among the recent records
	lindy  bool // every spend draws a log-uniform age rank
	recent []uint32
	next   int
	at     []int32 // record -> its index in live
	ages   agerank.Set
}

func newSpendPicker(young int, lindy bool) *spendPicker {
	return &spendPicker{young: young, lindy: lindy}
}

func (s *spendPicker) tracks() bool { return s.young > 0 || s.lindy }

// added notes that record i, the next in key order, was appended to live
// at index p.
func (s *spendPicker) added(i uint32, p int) {
	if !s.tracks() {
		return
	}
	if int(i) != len(s.at) {
		panic("spendPicker: records must be added in key order")
	}
	s.at = append(s.at, int32(p))
	if s.lindy {
		s.ages.Add()
	}
}

// moved notes that record i now sits at index p of live.
func (s *spendPicker) moved(i uint32, p int) {
	if s.tracks() {
		s.at[i] = int32(p)
	}
}

// spent notes that record i has no unspent output left: it left live.
func (s *spendPicker) spent(i uint32) {
	if s.lindy {
		s.ages.Remove(int(i))
	}
}

// created notes a record the mix created.
func (s *spendPicker) created(i uint32) {
	if s.young == 0 {
		return
	}
	ring := benchYoungBlocks * benchBlockOps * benchCreateShare / 100
	if len(s.recent) < ring {
		s.recent = append(s.recent, i)
		return
	}
	s.recent[s.next] = i
	s.next = (s.next + 1) % ring
}

// pick returns the index in live of the record to spend: under -ages lindy
// the one of a log-uniform age rank; under -young, for that percent of the
// spends, a young record that still has an unspent output. It reports
// false when the uniform choice stands.
func (s *spendPicker) pick(rng *rand.Rand, unspent []uint8) (int, bool) {
	if s.lindy {
		i := s.ages.Newest(agerank.LogUniform(rng.Float64(), s.ages.Alive()))
		return int(s.at[i]), true
	}
	if s.young == 0 || len(s.recent) == 0 || rng.IntN(100) >= s.young {
		return 0, false
	}
	i := s.recent[rng.IntN(len(s.recent))]
	if unspent[i] == 0 {
		return 0, false
	}
	return int(s.at[i]), true
}

// benchReadBatch is the keys per Get of the read phase, and benchReads the
// keys it reads of each age.
const (
	benchReadBatch = 1000
	benchReads     = 200_000
)

// benchReadOldVsFresh reads, in batches of 1000, live records loaded before
// the mix (old: produced at height 1) and live records the mix created
// (fresh), and reports keys/s of each: the Lindy bet a layered table makes
// is that the fresh are the cheap ones. Every key read must be found.
func benchReadOldVsFresh(b *testing.B, e engine.Engine, rng *rand.Rand, live []uint32, firstFresh uint32) {
	var old, fresh []uint32
	for _, i := range live {
		if i < firstFresh {
			old = append(old, i)
		} else {
			fresh = append(fresh, i)
		}
	}
	for _, c := range []struct {
		metric string
		keys   []uint32
	}{{"old-reads/s", old}, {"fresh-reads/s", fresh}} {
		if len(c.keys) < benchReadBatch {
			b.Logf("%s: only %d such records, not measured", c.metric, len(c.keys))
			continue
		}
		batch := make([]engine.Key, benchReadBatch)
		start := time.Now()
		for read := 0; read < benchReads; read += len(batch) {
			for j := range batch {
				batch[j] = BenchKey(c.keys[rng.IntN(len(c.keys))])
			}
			values, err := e.Get(context.Background(), batch)
			if err != nil {
				b.Fatal(err)
			}
			for j, v := range values {
				if v == nil {
					b.Fatalf("live record %x read as missing", batch[j])
				}
			}
		}
		b.ReportMetric(float64(benchReads)/time.Since(start).Seconds(), c.metric)
	}
}

// procWriteBytes is the bytes this process has dirtied in the page cache
// (Linux /proc/self/io write_bytes), which the kernel counts as bound for
// the storage device.
func procWriteBytes(b testing.TB) int64 {
	n, err := procField("/proc/self/io", "write_bytes:")
	if err != nil {
		b.Skipf("no /proc/self/io: %v", err)
	}
	return n
}

// peakRSS is the process's peak resident set in bytes: Linux's VmHWM, which
// getrusage's ru_maxrss also reports, read from /proc so that this package
// still compiles where syscall has no Getrusage (Windows).
func peakRSS() int64 {
	kb, _ := procField("/proc/self/status", "VmHWM:")
	return kb << 10 // kilobytes
}

// currentRSS is the process's resident set now (VmRSS).
func currentRSS() int64 {
	kb, _ := procField("/proc/self/status", "VmRSS:")
	return kb << 10
}

// procField is the number after name in a /proc file of "name value" lines
// (0 if the file has no such line).
func procField(path, name string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n, nil
		}
	}
	return 0, nil
}
