// Package redis is the adapter for the hot path: every state change is one Lua script (see lua/) on
// keys of one hash slot, and this package turns domain calls into script calls and replies back into
// domain types and errors.
package redis

// Keys builds key names. Concert state is tagged by concert, {c:<id>}, so that every script of a concert
// touches one hash slot and the service runs unchanged on Redis Cluster.
type Keys struct{ prefix string }

// NewKeys returns the key builder for prefix ("tr" in production; tests use a fresh prefix each).
func NewKeys(prefix string) Keys { return Keys{prefix: prefix} }

// Concert returns the keys of one concert.
func (k Keys) Concert(id string) ConcertKeys { return ConcertKeys{base: k.prefix + ":{c:" + id + "}:"} }

// ConcertKeys names the keys of one concert; all share the hash tag {c:<id>}.
type ConcertKeys struct{ base string }

func (c ConcertKeys) Meta() string      { return c.base + "meta" }
func (c ConcertKeys) Cfg() string       { return c.base + "cfg" }
func (c ConcertKeys) Events() string    { return c.base + "events" }
func (c ConcertKeys) Seq() string       { return c.base + "q:seq" }
func (c ConcertKeys) Wait() string      { return c.base + "q:wait" }
func (c ConcertKeys) Active() string    { return c.base + "q:active" }
func (c ConcertKeys) ActiveSeq() string { return c.base + "q:aseq" }
func (c ConcertKeys) Head() string      { return c.base + "q:head" }
func (c ConcertKeys) Bucket() string    { return c.base + "q:bucket" }
func (c ConcertKeys) Admitted() string  { return c.base + "q:admitted" }
func (c ConcertKeys) Done() string      { return c.base + "q:done" }
func (c ConcertKeys) Left() string      { return c.base + "q:left" }
func (c ConcertKeys) LeftLog() string   { return c.base + "q:leftlog" }
func (c ConcertKeys) LeftN() string     { return c.base + "q:leftn" }

// The KEYS of each script, in the order of its header.

func (c ConcertKeys) load() []string { return []string{c.Meta(), c.Cfg(), c.Events()} }

func (c ConcertKeys) join() []string {
	return []string{c.Cfg(), c.Seq(), c.Wait(), c.Active(), c.ActiveSeq(), c.Head(), c.Bucket(), c.Admitted(), c.Events()}
}

func (c ConcertKeys) leave() []string {
	return []string{c.Wait(), c.Active(), c.ActiveSeq(), c.Left(), c.LeftLog(), c.LeftN(), c.Events()}
}

func (c ConcertKeys) status() []string {
	return []string{c.Wait(), c.Active(), c.ActiveSeq(), c.Done()}
}

func (c ConcertKeys) tick() []string {
	return []string{c.Cfg(), c.Wait(), c.Active(), c.ActiveSeq(), c.Head(), c.Bucket(), c.Admitted(), c.Left(), c.LeftLog(), c.Events()}
}

func (c ConcertKeys) snapshot() []string {
	return []string{c.Cfg(), c.Head(), c.Seq(), c.Admitted(), c.Wait(), c.Active(), c.LeftLog()}
}

func (c ConcertKeys) configure() []string { return []string{c.Cfg(), c.Events()} }
