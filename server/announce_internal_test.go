package server

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/utxostore/utxostore/utxo"
)

// heardWhileHeld queues blocks 1, 2, … of the given sizes while the
// notifier holds block 0, then returns the heights it announces, in
// order, up to the last block queued.
func heardWhileHeld(t *testing.T, sizes []int) []uint32 {
	t.Helper()
	holding := make(chan struct{})
	release := make(chan struct{})
	heard := make(chan uint32, len(sizes)+1)
	a := newAnnouncer(slog.New(slog.NewTextHandler(io.Discard, nil)), time.Minute, func(_ context.Context, b utxo.Block, _ bool) {
		if b.Height == 0 {
			close(holding)
			<-release
		}
		heard <- b.Height
	})
	defer a.stop()
	a.add(utxo.Block{Height: 0}, false)
	<-holding
	for i, size := range sizes {
		a.add(utxo.Block{Height: uint32(i + 1), Size: int64(size)}, false)
	}
	close(release)
	var got []uint32
	for len(got) == 0 || got[len(got)-1] != uint32(len(sizes)) {
		select {
		case h := <-heard:
			got = append(got, h)
		case <-time.After(30 * time.Second):
			t.Fatalf("the last block was not announced; heard %v", got)
		}
	}
	return got
}

// TestAnnouncerDropsTheOldestWhenBehind: blocks connected while the
// notifiers are busy wait, in order, up to the bounds; past them the
// oldest are dropped, and the newest is always announced.
func TestAnnouncerDropsTheOldestWhenBehind(t *testing.T) {
	t.Run("blocks", func(t *testing.T) {
		got := heardWhileHeld(t, make([]int, 200))
		want := []uint32{0}
		for h := uint32(200 - maxAnnounceBlocks + 1); h <= 200; h++ {
			want = append(want, h)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("heard %v, want block 0 and the last %d: %v", got, maxAnnounceBlocks, want)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		quarter := maxAnnounceBytes / 4
		if got := heardWhileHeld(t, []int{quarter, quarter, quarter, quarter, quarter, quarter}); !slices.Equal(got, []uint32{0, 3, 4, 5, 6}) {
			t.Fatalf("heard %v, want block 0 and the last four", got)
		}
	})
	t.Run("one block over the bound", func(t *testing.T) {
		if got := heardWhileHeld(t, []int{1, maxAnnounceBytes + 1}); !slices.Equal(got, []uint32{0, 2}) {
			t.Fatalf("heard %v, want block 0 and the large block", got)
		}
	})
}

// TestAnAnnouncementThatHangsIsCutOff: an announcement whose reads never
// return is cancelled at the announcer's timeout, and the next block is
// announced.
func TestAnAnnouncementThatHangsIsCutOff(t *testing.T) {
	heard := make(chan uint32, 2)
	a := newAnnouncer(slog.New(slog.NewTextHandler(io.Discard, nil)), 10*time.Millisecond, func(ctx context.Context, b utxo.Block, _ bool) {
		if b.Height == 0 {
			<-ctx.Done() // a read that returns only when cancelled
		}
		heard <- b.Height
	})
	defer a.stop()
	a.add(utxo.Block{Height: 0}, false)
	a.add(utxo.Block{Height: 1}, false)
	for want := uint32(0); want <= 1; want++ {
		select {
		case h := <-heard:
			if h != want {
				t.Fatalf("heard block %d, want %d", h, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("block %d was not announced after an announcement that hangs", want)
		}
	}
}
