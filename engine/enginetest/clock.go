package enginetest

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when a test advances it. Engines that
// take a clock (memory.NewWithClock, pebble.Options.Now) run their
// time-to-live tests on one, so no test waits for the wall clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Unix(1_700_000_000, 0)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
