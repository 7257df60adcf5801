package dbtest

import (
	"sync/atomic"
	"time"
)

// Clock is the tests' one settable clock: services under test take its Now as their clock, and the test
// moves it with Set and Advance. It is safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { c := &Clock{}; c.Set(t); return c }

// Now is the clock's time, in UTC.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Advance moves the clock d ahead.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
