package snapshot

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
)

// Sorter puts coins in outpoint order (coinstats.Outpoint.Compare) within
// a memory bound: it sorts what it holds when the bound is reached, writes
// it to a temporary file (a run), and merges the runs at the end. A set of
// any size sorts in the memory the bound gives and the disk the coins take.
type Sorter struct {
	dir      string
	limit    int
	held     []coinstats.Coin
	heldSize int
	runs     []*os.File
	count    uint64
}

// DefaultSortMemory is the memory bound of NewSorter's callers that have
// no reason to choose another: coins' bytes held before a run is written.
const DefaultSortMemory = 256 << 20

// coinOverhead is what a held coin costs beyond its script.
const coinOverhead = 96

// NewSorter sorts in memory up to about memory bytes, and writes its runs
// to temporary files in dir (os.TempDir when empty).
func NewSorter(dir string, memory int) *Sorter {
	return &Sorter{dir: dir, limit: memory}
}

// Add takes c (its script is copied).
func (s *Sorter) Add(c *coinstats.Coin) error {
	held := *c
	held.Script = slices.Clone(c.Script)
	s.held = append(s.held, held)
	s.heldSize += coinOverhead + len(c.Script)
	s.count++
	if s.heldSize >= s.limit {
		return s.spill()
	}
	return nil
}

// Count is the number of coins added.
func (s *Sorter) Count() uint64 { return s.count }

func (s *Sorter) sortHeld() {
	slices.SortFunc(s.held, func(a, b coinstats.Coin) int { return a.Compare(b.Outpoint) })
}

// spill writes the coins held, sorted, as a run.
func (s *Sorter) spill() error {
	s.sortHeld()
	f, err := os.CreateTemp(s.dir, "utxostore-sort-*")
	if err != nil {
		return fmt.Errorf("sorting coins: %w", err)
	}
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	for i := range s.held {
		buf = s.held[i].AppendTxOutSer(buf[:0])
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("sorting coins: writing a run: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("sorting coins: writing a run: %w", err)
	}
	s.held, s.heldSize = s.held[:0], 0
	return nil
}

// DuplicateError: the same outpoint was added twice.
type DuplicateError struct{ Outpoint coinstats.Outpoint }

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("output %s appears twice", e.Outpoint)
}

// Each calls fn with every coin in outpoint order, once the coins are all
// added (it may be called once); an outpoint added twice is a
// *DuplicateError. The coin is fn's only for the call.
func (s *Sorter) Each(fn func(*coinstats.Coin) error) error {
	s.sortHeld()
	m := &merge{}
	for _, f := range s.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("sorting coins: %w", err)
		}
		m.push(&runSource{r: bufio.NewReaderSize(f, 1<<16)})
	}
	m.push(&heldSource{coins: s.held})
	if m.err != nil {
		return m.err
	}
	var previous coinstats.Outpoint
	for first := true; m.Len() > 0; first = false {
		src := m.sources[0]
		c := src.current()
		if !first && previous == c.Outpoint {
			return &DuplicateError{Outpoint: c.Outpoint}
		}
		previous = c.Outpoint
		if err := fn(c); err != nil {
			return err
		}
		if ok, err := src.next(); err != nil {
			return err
		} else if ok {
			heap.Fix(m, 0)
		} else {
			heap.Pop(m)
		}
	}
	return nil
}

// Close removes the runs.
func (s *Sorter) Close() error {
	var errs []error
	for _, f := range s.runs {
		errs = append(errs, f.Close(), os.Remove(f.Name()))
	}
	s.runs, s.held = nil, nil
	return errors.Join(errs...)
}

// source is one sorted sequence of the merge.
type source interface {
	current() *coinstats.Coin
	// next moves to the next coin; false at the end.
	next() (bool, error)
}

type heldSource struct {
	coins []coinstats.Coin
	at    int
}

func (h *heldSource) current() *coinstats.Coin { return &h.coins[h.at] }

func (h *heldSource) next() (bool, error) {
	h.at++
	return h.at < len(h.coins), nil
}

// runSource reads a run: coins in Core's TxOutSer serialization.
type runSource struct {
	r    *bufio.Reader
	coin coinstats.Coin
}

func (r *runSource) current() *coinstats.Coin { return &r.coin }

func (r *runSource) next() (bool, error) {
	var fixed [32 + 4 + 4 + 8]byte
	if _, err := io.ReadFull(r.r, fixed[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("sorting coins: reading a run: %w", err)
	}
	c := &r.coin
	copy(c.TxID[:], fixed[:32])
	c.Vout = binary.LittleEndian.Uint32(fixed[32:])
	code := binary.LittleEndian.Uint32(fixed[36:])
	c.Height, c.Coinbase = code>>1, code&1 == 1
	c.Value = binary.LittleEndian.Uint64(fixed[40:])
	peek, _ := r.r.Peek(9)
	size, width, err := chain.DecodeCompactSize(peek)
	if err != nil {
		return false, fmt.Errorf("sorting coins: reading a run: %w", err)
	}
	r.r.Discard(width)
	c.Script = slices.Grow(c.Script[:0], int(size))[:size]
	if _, err := io.ReadFull(r.r, c.Script); err != nil {
		return false, fmt.Errorf("sorting coins: reading a run: %w", err)
	}
	return true, nil
}

// merge is a heap of sources by their current coin.
type merge struct {
	sources []source
	err     error
}

// push adds src if it has a coin.
func (m *merge) push(src source) {
	if h, ok := src.(*heldSource); ok && len(h.coins) == 0 {
		return
	}
	if r, ok := src.(*runSource); ok {
		has, err := r.next()
		if err != nil {
			m.err = err
		}
		if !has {
			return
		}
	}
	heap.Push(m, src)
}

func (m *merge) Len() int { return len(m.sources) }
func (m *merge) Less(i, j int) bool {
	return m.sources[i].current().Compare(m.sources[j].current().Outpoint) < 0
}
func (m *merge) Swap(i, j int) { m.sources[i], m.sources[j] = m.sources[j], m.sources[i] }
func (m *merge) Push(x any)    { m.sources = append(m.sources, x.(source)) }
func (m *merge) Pop() any {
	last := m.sources[len(m.sources)-1]
	m.sources = m.sources[:len(m.sources)-1]
	return last
}
