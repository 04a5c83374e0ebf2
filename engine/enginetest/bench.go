package enginetest

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/agerank"
	"github.com/utxostore/utxostore/internal/benchmetric"
	"github.com/utxostore/utxostore/internal/latency"
	"github.com/utxostore/utxostore/internal/sysstat"
)

// BenchLive is the number of live records a benchmark loads: -live, else
// UTXOSTORE_BENCH_LIVE, else def (an environment variable as well as a
// flag, so one go test command over several packages can set it).
func (f *Flags) BenchLive(def int) int {
	if f.Live > 0 {
		return f.Live
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
	benchSpendSize   = benchmetric.SpendDataBytes
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
	// Flags are the command-line settings (RegisterFlags); nil means the
	// defaults.
	Flags *Flags
	// DiskBytes, if set, is the bytes the store takes on disk, reported
	// over the live records' minimal bytes (disk/minimal), per live
	// record (disk-B/live) and per live record over the mean value size
	// (disk/value).
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
// for a local engine the write-amp (benchmetric) and the peak RSS, with
// h.DiskBytes the disk/minimal, and then, untimed by the framework, the
// keys/s of batched reads of old and of fresh records
// (benchReadOldVsFresh).
//
// Use -benchtime Nx: the load is not timed but still takes minutes at
// large sizes, so the framework's first b.N=1 probe returns at once instead
// of loading a store for one op.
func BenchCreateSpendMix[E engine.Engine](b *testing.B, h BenchHarness[E]) {
	if b.N == 1 {
		return
	}
	f := h.Flags
	if f == nil {
		f = defaultFlags()
	}
	mode := checkMixFlags(b, f)
	dir := mixDir(b, f, h.Local)
	m := loadMix(b, h, f, dir, mode)
	defer m.e.Close()
	run := m.measure(b, h, f, dir)
	m.report(b, h, run)
	if h.Report != nil {
		h.Report(b, m.e)
	}
	benchReadOldVsFresh(b, m.e, m.rng, m.live, uint32(m.loaded))
}

// checkMixFlags refuses settings out of range and returns the sync mode
// of the timed phase.
func checkMixFlags(b *testing.B, f *Flags) engine.SyncMode {
	mode, err := engine.ParseSyncMode(f.Sync)
	if err != nil {
		b.Fatal(err)
	}
	if f.Young < 0 || f.Young > 100 {
		b.Fatalf("-young %d: a percentage lies in [0, 100]", f.Young)
	}
	if f.Ages != "uniform" && f.Ages != "lindy" {
		b.Fatalf("-ages %q: uniform or lindy", f.Ages)
	}
	if f.Ages == "lindy" && f.Young > 0 {
		b.Fatalf("-young applies to -ages uniform: with -ages lindy the age distribution already decides how many spends are young")
	}
	if f.Clients < 1 || f.Clients > 1024 {
		b.Fatalf("-clients %d: between 1 and 1024 calls in flight", f.Clients)
	}
	return mode
}

// mixDir is the store's directory: -benchdir for a local engine, else a
// temporary one.
func mixDir(b *testing.B, f *Flags, local bool) string {
	if !local {
		for _, name := range []string{"sync", "benchdir"} {
			if f.given(name) {
				b.Logf("-%s does not apply to this engine: ignored", name)
			}
		}
		return b.TempDir()
	}
	if f.Dir != "" {
		return f.Dir
	}
	return b.TempDir()
}

// mixState is the mix's engine and its own bookkeeping: the records with
// unspent outputs (live), and each record's count of them and value size
// (per record ever created); the picker knows, with -young or -ages
// lindy, each record's place in live and what it needs to choose.
type mixState[E engine.Engine] struct {
	e          E
	rng        *rand.Rand
	picker     *spendPicker
	live       []uint32
	unspent    []uint8
	size       []uint16
	valueBytes int64 // of the loaded records
	loaded     int64
	reopen     time.Duration
	height     uint32
	nextKey    uint32
}

// loadMix opens the engine and loads the live records, for a local
// engine under SyncBlock and then reopened under mode (the load is not
// what is measured, and under SyncAlways it would take far longer).
func loadMix[E engine.Engine](b *testing.B, h BenchHarness[E], f *Flags, dir string, mode engine.SyncMode) *mixState[E] {
	loadBatch := h.LoadBatch
	if loadBatch == 0 {
		loadBatch = 10_000
	}
	loadStart := time.Now()
	loadMode := mode
	if h.Local {
		loadMode = engine.SyncBlock
	}
	e := h.Open(b, dir, loadMode)
	m := &mixState[E]{rng: rand.New(rand.NewPCG(1, 2)), picker: newSpendPicker(f.Young, f.Ages == "lindy"), height: 2}
	benchLoad(b, e, m.rng, f.BenchLive(h.Live), loadBatch, func(uint32) uint32 { return 1 }, func(i uint32, v []byte) {
		m.valueBytes += int64(len(v))
		m.picker.added(i, len(m.live))
		m.live = append(m.live, i)
		m.unspent = append(m.unspent, v[0])
		m.size = append(m.size, uint16(len(v)))
	})
	m.loaded = int64(len(m.live))
	m.nextKey = uint32(len(m.live))
	if h.Local {
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		// Opening a store of this size is what a restart costs (an
		// engine may rebuild what it keeps in memory from the data).
		openStart := time.Now()
		e = h.Open(b, dir, mode)
		m.reopen = time.Since(openStart)
	}
	m.e = e
	b.Logf("loaded %d records in %v", m.loaded, time.Since(loadStart).Round(time.Second))
	if m.picker.young > 0 {
		b.Logf("%d%% of the spends pick among the records created in the last %d blocks", m.picker.young, benchYoungBlocks)
	}
	if m.picker.lindy {
		b.Logf("spends draw the age rank of the record they spend log-uniformly over the live records")
	}
	return m
}

// mixRun is what the timed phase measured.
type mixRun struct {
	elapsed time.Duration
	calls   *callsInFlight
	// logical counts the logical bytes of the ops (benchmetric); versions
	// what they hand the engine (the key and the record's new value).
	logical, versions int64
	// dirtied is what the process dirtied in the page cache, device what
	// the device under the store wrote (dirtied where that cannot be
	// read); local engines only.
	dirtied, device int64
}

// measure runs b.N ops, timed, in calls of -batch, ending a block every
// benchBlockOps.
func (m *mixState[E]) measure(b *testing.B, h BenchHarness[E], f *Flags, dir string) mixRun {
	var run mixRun
	var dirtiedBefore, deviceBefore int64
	deviceOK := false
	if h.Local {
		dirtiedBefore = procWriteBytes(b)
		deviceBefore, deviceOK = sysstat.DeviceWrites(dir)
	}
	// Each Update call's time: a store that does its upkeep in bursts
	// (writing out what it buffered) makes some callers wait for it.
	run.calls = &callsInFlight{limit: f.Clients}
	stopProfile := startProfile(b, f.Profile)
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		n := min(f.Batch, b.N-done)
		batch, created := m.nextBatch(n, run.calls.limit, &run)
		if err := run.calls.send(m.e, batch, created, m.spendable); err != nil {
			b.Fatal(err)
		}
		done += n
		if done/benchBlockOps != (done-n)/benchBlockOps {
			m.endBlock(b, h, run.calls)
		}
	}
	if err := run.calls.wait(0, m.spendable); err != nil {
		b.Fatal(err)
	}
	run.elapsed = time.Since(start)
	b.StopTimer()
	stopProfile()
	writeHeapProfile(b, f.HeapProfile)
	if h.Local {
		// What the device wrote, where it can be read (see
		// sysstat.DeviceWrites for why write_bytes is not that);
		// write_bytes, what the process dirtied, as well.
		run.dirtied = procWriteBytes(b) - dirtiedBefore
		run.device = run.dirtied
		if deviceAfter, ok := sysstat.DeviceWrites(dir); ok && deviceOK {
			run.device = deviceAfter - deviceBefore
		}
	}
	return run
}

// spendable makes record i one a spend may pick.
func (m *mixState[E]) spendable(i uint32) {
	m.picker.added(i, len(m.live))
	m.picker.created(i)
	m.live = append(m.live, i)
}

// nextBatch draws the n ops of one Update call, creates and spends, and
// counts their bytes into run. With one caller a call may spend what it
// creates; with several, a record becomes spendable once the call
// creating it returned, so its creates come back as created.
func (m *mixState[E]) nextBatch(n, callers int, run *mixRun) (batch []engine.Update, created []uint32) {
	batch = make([]engine.Update, 0, n)
	for len(batch) < n {
		if m.rng.IntN(100) < benchCreateShare || len(m.live) == 0 {
			k, u := m.create(run)
			batch = append(batch, u)
			if callers == 1 {
				m.spendable(k)
			} else {
				created = append(created, k)
			}
			continue
		}
		batch = append(batch, m.spend(run))
	}
	return batch, created
}

// create draws a new record produced at the current height.
func (m *mixState[E]) create(run *mixRun) (uint32, engine.Update) {
	v, terms := benchRecord(m.rng, m.height)
	run.logical += int64(len(v)) + engine.KeySize
	run.versions += int64(len(v)) + engine.KeySize
	k := m.nextKey
	m.nextKey++
	m.unspent = append(m.unspent, v[0])
	m.size = append(m.size, uint16(len(v)))
	return k, engine.Update{Key: BenchKey(k), Fn: put(v, terms)}
}

// spend spends the next output of a record the picker chooses (any live
// one alike by default); a record left with none leaves live.
func (m *mixState[E]) spend(run *mixRun) engine.Update {
	p, ok := m.picker.pick(m.rng, m.unspent)
	if !ok {
		p = m.rng.IntN(len(m.live))
	}
	i := m.live[p]
	if m.unspent[i]--; m.unspent[i] == 0 {
		m.live[p] = m.live[len(m.live)-1]
		m.picker.moved(m.live[p], p)
		m.live = m.live[:len(m.live)-1]
		m.picker.spent(i)
	}
	m.size[i] += benchSpendSize
	run.logical += benchmetric.SpendDataBytes + engine.KeySize
	run.versions += int64(m.size[i]) + engine.KeySize
	return engine.Update{Key: BenchKey(i), Fn: benchSpend(m.height)}
}

// endBlock ends a block once all its calls are in: the next height, its
// prune, and a checkpoint (or h.Block).
func (m *mixState[E]) endBlock(b *testing.B, h BenchHarness[E], calls *callsInFlight) {
	if err := calls.wait(0, m.spendable); err != nil {
		b.Fatal(err)
	}
	m.height++
	benchPrune(b, m.e, m.height)
	if h.Block != nil {
		h.Block(b, m.e, m.height)
	} else if err := m.e.Checkpoint(context.Background(), m.height); err != nil {
		b.Fatal(err)
	}
}

// report reports the timed phase's metrics and, with h.DiskBytes, the
// store's size against its live records.
func (m *mixState[E]) report(b *testing.B, h BenchHarness[E], run mixRun) {
	b.ReportMetric(float64(b.N)/run.elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(run.calls.times.Quantile(0.99).Microseconds())/1000, "call-p99-ms")
	b.ReportMetric(float64(run.calls.times.Max().Microseconds())/1000, "call-max-ms")
	b.ReportMetric(float64(len(m.live)), "live")
	if h.Local {
		if run.logical > 0 {
			b.ReportMetric(benchmetric.WriteAmp(run.device, run.logical), benchmetric.WriteAmpName)
			b.ReportMetric(float64(run.device)/float64(b.N), "device-B/op")
			b.ReportMetric(float64(run.dirtied)/float64(b.N), "dirtied-B/op")
			// The write-amp of a store that writes each op's outcome
			// once, nothing else: what logging the new record versions
			// costs before any table is kept.
			b.ReportMetric(benchmetric.WriteAmp(run.versions, run.logical), "versions-amp")
		}
		b.ReportMetric(m.reopen.Seconds(), "reopen-s")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MB")
		// The peak may come from the load; this is the steady state.
		b.ReportMetric(float64(currentRSS())/(1<<20), "end-RSS-MB")
	}
	if h.DiskBytes != nil {
		disk := h.DiskBytes(b, m.e)
		avgValue := float64(m.valueBytes) / float64(m.loaded)
		b.ReportMetric(float64(disk)/float64(len(m.live))/avgValue, "disk/value")
		// The minimal bytes of the live records: their keys and values,
		// and nothing else. Over the mean value size it is the disk/value
		// of a store that keeps just them.
		var minimal int64
		for _, i := range m.live {
			minimal += int64(m.size[i]) + engine.KeySize
		}
		b.ReportMetric(float64(minimal)/float64(len(m.live))/avgValue, "records/value")
		b.ReportMetric(benchmetric.DiskPerMinimal(disk, minimal), benchmetric.DiskPerMinimalName)
		b.ReportMetric(float64(disk)/float64(len(m.live)), "disk-B/live")
	}
}

// callsInFlight runs the mix's Update calls, up to limit at once, and
// times each. Calls return in any order but are taken back in the order
// they were sent, so the records they created become spendable in key
// order (spendPicker needs it).
type callsInFlight struct {
	limit   int
	pending []inFlightCall
	mu      sync.Mutex
	times   latency.Hist
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

// startProfile starts the CPU profile -mixprofile asks for (path) and
// returns what stops it.
func startProfile(b *testing.B, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
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

// writeHeapProfile writes the heap profile -mixheapprofile asks for
// (path).
func writeHeapProfile(b *testing.B, path string) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
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
