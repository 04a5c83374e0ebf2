package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// blockProgress reports an import's progress: a bar with blocks/s, tx/s
// and ETA on a terminal, a plain line every few seconds otherwise (logs,
// CI), nothing when quiet.
type blockProgress interface {
	// block reports one imported block of rawBytes bytes.
	block(height uint32, txs int, rawBytes int64)
	// done prints the final line.
	done()
}

// newBlockProgress picks the form for w. totalBytes (the block files'
// size; 0 if unknown) drives the bar's ETA. everyBlocks > 0 asks for a
// plain line every that many blocks instead (scripts and tests).
func newBlockProgress(w *os.File, totalBytes int64, quiet bool, everyBlocks int) blockProgress {
	switch {
	case quiet:
		return quietProgress{}
	case everyBlocks > 0:
		return &lineProgress{w: w, start: time.Now(), last: time.Now(), every: everyBlocks}
	case isTerminal(w):
		return newBarProgress(w, totalBytes)
	default:
		return &lineProgress{w: w, start: time.Now(), last: time.Now()}
	}
}

func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

type quietProgress struct{}

func (quietProgress) block(uint32, int, int64) {}
func (quietProgress) done()                    {}

// rates holds the counts every form reports.
type rates struct {
	start  time.Time
	blocks int
	txs    int
	height uint32
}

func (r *rates) add(height uint32, txs int) {
	r.blocks++
	r.txs += txs
	r.height = height
}

func (r *rates) String() string {
	secs := time.Since(r.start).Seconds()
	return fmt.Sprintf("height %d, %d blocks, %d txs: %.0f blocks/s, %.0f tx/s",
		r.height, r.blocks, r.txs, float64(r.blocks)/secs, float64(r.txs)/secs)
}

// lineProgress prints a line every two seconds, or every `every` blocks,
// each starting with verb ("imported" when empty).
type lineProgress struct {
	w     io.Writer
	verb  string
	start time.Time
	last  time.Time
	every int
	rates
}

func (p *lineProgress) block(height uint32, txs int, _ int64) {
	if p.rates.start.IsZero() {
		p.rates.start = p.start
	}
	p.add(height, txs)
	if p.every > 0 && p.blocks%p.every == 0 || p.every == 0 && time.Since(p.last) >= 2*time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.w, "%s %s\n", p.word(), &p.rates)
	}
}

func (p *lineProgress) done() {
	if p.blocks > 0 {
		fmt.Fprintf(p.w, "%s %s in %.1fs\n", p.word(), &p.rates, time.Since(p.start).Seconds())
	}
}

func (p *lineProgress) word() string {
	if p.verb == "" {
		return "imported"
	}
	return p.verb
}

// barProgress is a progressbar/v3 bar over the bytes of the block files,
// its description carrying the block and transaction rates.
type barProgress struct {
	bar *progressbar.ProgressBar
	rates
}

func newBarProgress(w io.Writer, totalBytes int64) *barProgress {
	if totalBytes <= 0 {
		totalBytes = -1 // unknown: a spinner without ETA
	}
	bar := progressbar.NewOptions64(totalBytes,
		progressbar.OptionSetWriter(w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionFullWidth(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
	return &barProgress{bar: bar, rates: rates{start: time.Now()}}
}

func (p *barProgress) block(height uint32, txs int, rawBytes int64) {
	p.add(height, txs)
	p.bar.Describe(p.rates.String())
	_ = p.bar.Add64(rawBytes)
}

func (p *barProgress) done() { _ = p.bar.Finish() }
