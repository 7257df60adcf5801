// Package redis is the adapter for the hot path: every state change is a Lua script (see lua/) on the
// keys of one hash slot, or a short chain of them over a concert's slots, and this package turns domain
// calls into script calls and replies back into domain types and errors. Store serves the sale through
// its parts: Line (joins, leaves, the tick, tokens), Seats (holds, cancels, payments, seat maps), Wallet
// (points) and Draws (the on-sale), and keeps each concert's layout and settings itself. With lua/ it is
// the one home of the data layout: key names (keys.go, seatslot_keys.go, deadletter.go), each script
// call's KEYS and ARGV (args.go), its reply (reply.go and each noun's file), record encodings
// (layout.go), the stream events and their fields (events.go), the state marker (state.go), what
// restore writes (repair.go) and what reconcile and the load-test checker read (inspect.go). Around the
// scripts: the readiness probe (ping.go), the live concerts (activity.go) and the writes that wait for a
// replica (replicas.go).
package redis

import (
	"hash/crc32"
	"strconv"
)

// Keys builds key names. Concert state is tagged by concert, {c:<id>}, so that every script of a concert
// touches one hash slot and the service runs unchanged on Redis Cluster.
type Keys struct{ prefix string }

// NewKeys returns the key builder for prefix ("tr" in production; tests use a fresh prefix each).
func NewKeys(prefix string) Keys { return Keys{prefix: prefix} }

// State is the state marker's key: present while Redis holds the whole of the sale's state (see
// StateMarker, state.go). It has no hash tag; only restore and the readiness check touch it.
func (k Keys) State() string { return k.prefix + ":state" }

// Live is the zset of concerts with activity: member concert id, score when an instance last saw someone
// there (Unix ms). It has no hash tag: one key, read once per tick by every scheduler (activity.go).
func (k Keys) Live() string { return k.prefix + ":live" }

// Concert returns the keys of one concert.
func (k Keys) Concert(id string) ConcertKeys {
	return ConcertKeys{base: k.prefix + ":{c:" + id + "}:", shard: k.prefix + ":{c:" + id + ":q"}
}

// ConcertKeys names the keys of one concert; all share the hash tag {c:<id>}, but the shards of a line
// spread over several slots (Shard).
type ConcertKeys struct {
	base, shard string
	at          []int // the tag suffix of each shard of the line where its placement chose one (Placed)
}

// Placed is c with the tag suffix of each shard of its line as its placement chose them (Layout.ShardAt;
// 0 or none: no suffix).
func (c ConcertKeys) Placed(at []int) ConcertKeys {
	c.at = at
	return c
}

// LineShard is the shard of a user in a line of shards shards: a stable hash of the user id.
func LineShard(userID string, shards int) int {
	if shards <= 1 {
		return 0
	}
	return int(crc32.ChecksumIEEE([]byte("line:"+userID)) % uint32(shards))
}

// Shard returns the keys of shard n of a line spread over several slots (lineShards > 1), tagged
// {c:<id>:q<n>}, or {c:<id>:q<n>@<m>} where the placement chose suffix m for it (placement.go): a
// waiting fan's place, liveness, rate bucket and proof of work live in their shard. A line of one shard
// keeps every key in the concert's slot instead (the keys above).
func (c ConcertKeys) Shard(n int) ShardKeys {
	at := 0
	if n < len(c.at) {
		at = c.at[n]
	}
	return c.shardAt(n, at)
}

// shardAt is the keys of shard n tagged with suffix at (0: none).
func (c ConcertKeys) shardAt(n, at int) ShardKeys {
	tag := c.shard + strconv.Itoa(n)
	if at > 0 {
		tag += "@" + strconv.Itoa(at)
	}
	return ShardKeys{base: tag + "}:"}
}

// LineWaiting is the number of fans waiting in every shard of a sharded line, as the last tick counted.
func (c ConcertKeys) LineWaiting() string { return c.base + "q:lw" }

// ShardKeys names the keys of one shard of a concert's line; all share the hash tag {c:<id>:q<n>}.
type ShardKeys struct{ base string }

// Places, Order and Drawn are the shard's part of the line, as the concert's keys of the same names.
func (s ShardKeys) Places() string { return s.base + "places" }
func (s ShardKeys) Order() string  { return s.base + "order" }
func (s ShardKeys) Drawn() string  { return s.base + "drawn" }
func (s ShardKeys) Alive() string  { return s.base + "alive" }
func (s ShardKeys) Events() string { return s.base + "events" }

// LegacyWait is the shard's line as layout version 1 may have kept it (MigrateLayout moves it).
func (s ShardKeys) LegacyWait() string { return s.base + "wait" }

// Prequeue is the shard's part of a sale's pre-queue: entrant -> entry time (ms), or -seq once the draw
// placed them; Draw holds sealed ('1' once the shard's pre-queue is closed).
func (s ShardKeys) Prequeue() string { return s.base + "pre" }
func (s ShardKeys) Draw() string     { return s.base + "draw" }

// Token is the ACTIVE token of each fan of the shard, as the round that admitted them wrote it
// (line_pop): '<seq>:<until ms>:<show deadline ms, 0 once shown>', '<seq>:d' once DONE, '<seq>:x' once
// left; Gate is the shard's fans' records of open holds (as ConcertKeys.Gate); Shown the fans shown up
// here since the last round read them (gate_apply, line_heads): a fan's hold touches only their shard
// and their seat's slot (docs/scaleout.md, "The gate on the fan's shard").
func (s ShardKeys) Token() string { return s.base + "tok" }
func (s ShardKeys) Gate() string  { return s.base + "ugate" }
func (s ShardKeys) Shown() string { return s.base + "shown" }

// UserRate is a user's rate bucket for joins and holds, in their shard's slot.
func (s ShardKeys) UserRate(userID string) string { return s.base + "rl:" + userID }

// PowUsed marks a proof-of-work challenge used, in the joining fan's shard ("" the placeholder).
func (s ShardKeys) PowUsed(id string) string {
	if id == "" {
		return s.base + "pow"
	}
	return s.base + "pow:" + id
}

// All returns the shard's keys but its rate buckets and proof marks (which expire on their own).
func (s ShardKeys) All() []string {
	return []string{s.Places(), s.Order(), s.Drawn(), s.LegacyWait(), s.Alive(), s.Events(), s.DeadLetters(), s.Prequeue(), s.Draw(),
		s.Token(), s.Gate(), s.Shown()}
}

func (c ConcertKeys) Meta() string      { return c.base + "meta" }
func (c ConcertKeys) Cfg() string       { return c.base + "cfg" }
func (c ConcertKeys) Events() string    { return c.base + "events" }
func (c ConcertKeys) Seq() string       { return c.base + "q:seq" }
func (c ConcertKeys) Active() string    { return c.base + "q:active" }
func (c ConcertKeys) ActiveSeq() string { return c.base + "q:aseq" }
func (c ConcertKeys) Head() string      { return c.base + "q:head" }
func (c ConcertKeys) Bucket() string    { return c.base + "q:bucket" }
func (c ConcertKeys) Admitted() string  { return c.base + "q:admitted" }
func (c ConcertKeys) Done() string      { return c.base + "q:done" }
func (c ConcertKeys) Left() string      { return c.base + "q:left" }
func (c ConcertKeys) LeftLog() string   { return c.base + "q:leftlog" }
func (c ConcertKeys) LeftN() string     { return c.base + "q:leftn" }

// Quit and Owed are a sharded line's seqs that admission must treat apart for a few seconds
// (line_left, line_admit): Quit those whose fan left (never admitted), Owed those a round passed while
// their join was between its two steps (no join is admitted at once ahead of them).
func (c ConcertKeys) Quit() string { return c.base + "q:quit" }
func (c ConcertKeys) Owed() string { return c.base + "q:owed" }

// The line: Places is the hash user -> seq of every fan WAITING in it, the one answer to "is this fan
// in line, and at which arrival"; Order is a list of "<seq>|<user>" in arrival order, from which the
// tick takes the head; Drawn is the same of a sale's entrants as the draw placed them, whose seqs all
// come before the arrivals', so the tick takes from it first. A fan who leaves is taken out of Places
// only: their entry stays in its list until the head reaches it, and is skipped there (its user no
// longer has that seq in Places). A hash and two lists cost about 86 bytes a fan at a million, where
// a sorted set (layout version 1) costs 110 (docs/performance.md, "Bytes per waiting fan").
func (c ConcertKeys) Places() string { return c.base + "q:places" }
func (c ConcertKeys) Order() string  { return c.base + "q:order" }
func (c ConcertKeys) Drawn() string  { return c.base + "q:drawn" }

// LegacyWait is the line as layout version 1 may have kept it: a sorted set user -> seq, which
// MigrateLayout moves into Places and Order (line_migrate).
func (c ConcertKeys) LegacyWait() string { return c.base + "q:wait" }

// PowUsed marks a proof-of-work challenge of id as used, until it expires; "" names the placeholder
// key of a join without one (scripts must declare every key they may touch).
func (c ConcertKeys) PowUsed(id string) string {
	if id == "" {
		return c.base + "pow"
	}
	return c.base + "pow:" + id
}

// AccessCodes is the concert's presale codes: hash of hex SHA-256(code) -> owner user ("" while unclaimed).
func (c ConcertKeys) AccessCodes() string { return c.base + "codes" }

// UserRate is a user's rate bucket for the concert's state-changing calls (join, hold, cancel, pay):
// in the concert's slot, so that the scripts check it in the call they make anyway. A concert whose
// seats are spread keeps a fan's hold bucket here only while they have no open hold (gate_apply), and
// their joins', cancels' and payments' in the shard's and the seat slots' keys.
func (c ConcertKeys) UserRate(userID string) string { return c.base + "rl:" + userID }

// The on-sale's keys (see lua/draw_*.lua): the pre-queue's entrants, the draw's state (the seed among
// it, secret until the draw), its keys in draw order as one string of raw 32-byte keys, and the lease
// that keeps schedulers from computing the same draw at once.
func (c ConcertKeys) Prequeue() string { return c.base + "q:pre" }
func (c ConcertKeys) Draw() string     { return c.base + "draw" }
func (c ConcertKeys) DrawKeys() string { return c.base + "dkeys" }
func (c ConcertKeys) DrawLock() string { return c.base + "dlock" }

// Inventory is the concert's seat count hash (seats, avail, sold, soldout), kept by the seat scripts in
// the concert's slot so that the admission tick reads it in the same script.
func (c ConcertKeys) Inventory() string { return c.base + "inv" }

// Seen is when the fan of each WAITING arrival was last seen, for a line of one slot: a string of 6-byte
// fields (Unix ms, big-endian), the field of arrival seq at byte (seq - seenbase - 1) x 6, seenbase in
// cfg. 6 bytes an arrival, where a hash field costs 56; the tick starts it afresh (seenbase moves to the
// newest seq) whenever the line is empty, so it spans the arrivals since the line last emptied. Alive is
// the hash seq -> when last seen (Unix ms) that a line of one slot keeps in place of Seen in layout
// version 1, and MigrateLayout moves it into Seen (a line over shards keeps such a hash in each shard,
// ShardKeys.Alive: its seqs are a sparse share of every seq). Abandoned counts the fans dropped for
// silence or no-show.
func (c ConcertKeys) Seen() string      { return c.base + "q:seen" }
func (c ConcertKeys) Alive() string     { return c.base + "q:alive" }
func (c ConcertKeys) Abandoned() string { return c.base + "q:abandoned" }

// NoShow is the zset user -> deadline (ms) of an admitted fan's first gated call (noShowSeconds).
func (c ConcertKeys) NoShow() string { return c.base + "q:noshow" }

// All returns every key of the concert, its seat maps of scheduleIDs included.
func (c ConcertKeys) All(scheduleIDs []string) []string {
	keys := []string{c.Meta(), c.Cfg(), c.Events(), c.Seq(), c.Places(), c.Order(), c.Drawn(), c.LegacyWait(), c.Active(), c.ActiveSeq(), c.Head(), c.Bucket(),
		c.Admitted(), c.Done(), c.Left(), c.LeftLog(), c.LeftN(), c.Holds(), c.Reservations(), c.UserHolds(), c.Paying(), c.Sold(),
		c.AccessCodes(), c.Inventory(), c.Seen(), c.Alive(), c.Abandoned(), c.NoShow(), c.LineWaiting(), c.Quit(), c.Owed()}
	keys = append(keys, c.Prequeue(), c.Draw(), c.DrawKeys(), c.DrawLock())
	for _, s := range scheduleIDs {
		keys = append(keys, c.Seats(s))
	}
	return keys
}

func (c ConcertKeys) Seats(scheduleID string) string { return c.base + "seats:" + scheduleID }
func (c ConcertKeys) Holds() string                  { return c.base + "holds" }
func (c ConcertKeys) Reservations() string           { return c.base + "res" }
func (c ConcertKeys) UserHolds() string              { return c.base + "uholds" }
func (c ConcertKeys) Paying() string                 { return c.base + "paying" }
func (c ConcertKeys) Sold() string                   { return c.base + "sold" }

// WalletShards is the fixed number of wallet shards. Changing it moves balances between keys: it is
// part of the data layout, not a tuning knob.
const WalletShards = 64

// WalletShard is the shard of a user's wallet: a stable hash of the user id.
func WalletShard(userID string) int { return int(crc32.ChecksumIEEE([]byte(userID)) % WalletShards) }

// Wallet returns the keys of the wallet shard of userID.
func (k Keys) Wallet(userID string) WalletKeys { return k.WalletShard(WalletShard(userID)) }

// WalletShard returns the keys of wallet shard n.
func (k Keys) WalletShard(n int) WalletKeys {
	return WalletKeys{base: k.prefix + ":{w:" + strconv.Itoa(n) + "}:"}
}

// WalletKeys names the keys of one wallet shard; all share the hash tag {w:<n>}.
type WalletKeys struct{ base string }

func (w WalletKeys) Balances() string { return w.base + "bal" }
func (w WalletKeys) Debits() string   { return w.base + "debits" }
func (w WalletKeys) Refunds() string  { return w.base + "refunds" }
func (w WalletKeys) Events() string   { return w.base + "events" }

// UserRate is a user's rate bucket for charges, in the wallet shard's slot.
func (w WalletKeys) UserRate(userID string) string { return w.base + "rl:" + userID }

// Idempotency is the record of one user's Idempotency-Key; "" names the shard's placeholder key for
// calls without one (scripts must declare every key they may touch).
func (w WalletKeys) Idempotency(userID, key string) string {
	if key == "" {
		return w.base + "idem"
	}
	return w.base + "idem:" + userID + ":" + key
}

// All returns the shard's keys but its idempotency records (which expire on their own).
func (w WalletKeys) All() []string {
	return []string{w.Balances(), w.Debits(), w.Refunds(), w.Events()}
}
