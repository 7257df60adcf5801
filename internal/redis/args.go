package redis

import (
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The KEYS and ARGV of each script call, in the order of its header: one pure method per script, named
// after it, on the keys of the slot the script runs in (ConcertKeys or WalletKeys). Everything a call
// sends is built here, the user's rate bucket and the rate limit included: the Store passes what a
// builder returns as it is, and TestScriptHeaders holds what the same builders return against each
// script's header. The key names are in keys.go.

// call is one script call's KEYS and ARGV as its builder returns them.
type call struct{ keys, args []string }

func built(keys, args []string) call { return call{keys: keys, args: args} }

// concertLoad is concert_load's call: con's catalog and settings.
// sched is where its seat slots are (its placement: PlaceSeatSlots, recorded with the concert).
func (c ConcertKeys) concertLoad(con ticketrush.Concert, sched string, now time.Time) (keys, args []string) {
	q := con.Queue
	keys = []string{c.Meta(), c.Cfg(), c.Events(), c.Draw(), c.Inventory()}
	args = []string{con.Title, con.Venue, itoa(q.ActiveCapacity), itoa(q.AdmitPerSecond), ms(q.ActiveTTL), ms(q.HoldTTL),
		itoa(q.MaxHoldsPerUser), flag(q.Paused), millis(now), itoa(q.JoinPowBits), flag(q.AccessCodeRequired),
		saleOpens(con.Sale), salePrequeueOpens(con.Sale), saleSeed(con.Sale), itoa(q.ActivePerSeat),
		itoa(con.TotalSeats() * len(con.Schedules)), ms(q.AbandonAfter), ms(q.NoShow), itoa(max(1, q.LineShards))}
	args = append(args, sched, itoa(LayoutVersion))
	return keys, args
}

func saleOpens(s *ticketrush.Sale) string {
	if s == nil {
		return ""
	}
	return millis(s.OpensAt)
}

func salePrequeueOpens(s *ticketrush.Sale) string {
	if s == nil {
		return ""
	}
	return millis(s.PrequeueOpensAt)
}

func saleSeed(s *ticketrush.Sale) string {
	if s == nil {
		return ""
	}
	return hex.EncodeToString(s.Seed[:])
}

// queueJoin is queue_join's call: the user's join with what it carries past the gates (powid "" none,
// '-' a proof that failed the check; powexp 0 without one), under the rate l.
func (c ConcertKeys) queueJoin(userID string, pass ticketrush.JoinPass, l UserLimit, now time.Time, stock ...string) (keys, args []string) {
	keys = []string{c.Cfg(), c.Seq(), c.Places(), c.Active(), c.ActiveSeq(), c.Head(), c.Bucket(), c.Admitted(), c.Events(),
		c.Prequeue(), c.Draw(), c.Inventory(), c.Holds(), c.Seen(), c.NoShow(), c.UserRate(userID), c.PowUsed(pass.PowID),
		c.AccessCodes(), c.Order()}
	keys = append(keys, stock...)
	powID, powExp := powArgs(pass)
	args = []string{userID, millis(now), itoa(l.Rate), itoa(l.Burst), powID, itoa(pass.PowBits), powExp, pass.CodeHash}
	return keys, args
}

// joinArgs is what line_arrive takes of one join: the user and the hash of the access code ("" none).
type joinArgs struct{ user, code string }

// lineArrive is line_arrive's call: the first step of a batch of joins to a sharded line, each with the hash
// of the access code it carries ("" none).
func (c ConcertKeys) lineArrive(joins []joinArgs, now time.Time) (keys, args []string) {
	keys = []string{c.Cfg(), c.Seq(), c.Active(), c.ActiveSeq(), c.Events(), c.Inventory(), c.AccessCodes(), c.LineWaiting(),
		c.Draw()}
	coded := slices.ContainsFunc(joins, func(j joinArgs) bool { return j.code != "" })
	args = make([]string, 0, 2+2*len(joins))
	args = append(args, millis(now), flag(coded))
	for _, j := range joins {
		args = append(args, j.user)
	}
	if coded {
		for _, j := range joins {
			args = append(args, j.code)
		}
	}
	return keys, args
}

// enterJoin is what line_enter needs of one join of a shard: the user takes arrival seq a.seq in their
// shard sh (seq 0: enters its pre-queue), with what line_arrive said of the concert's gates (a) and what
// the join carries past them, under the rate l.
type enterJoin struct {
	sh   ShardKeys
	user string
	a    arrival
	pass ticketrush.JoinPass
	l    UserLimit
	now  time.Time
}

// lineEnters is line_enter's call for a batch of joins of one shard (each join's sh is that shard).
func lineEnters(joins []enterJoin) (keys, args []string) {
	sh := joins[0].sh
	keys = make([]string, 0, 6+2*len(joins))
	keys = append(keys, sh.Places(), sh.Alive(), sh.Events(), sh.Prequeue(), sh.Draw(), sh.Order())
	args = make([]string, 0, 11*len(joins))
	for _, j := range joins {
		keys = append(keys, sh.UserRate(j.user), sh.PowUsed(j.pass.PowID))
		powID, powExp := powArgs(j.pass)
		args = append(args, j.user, millis(j.now), utoa(j.a.seq), itoa(j.l.Rate), itoa(j.l.Burst), powID,
			itoa(j.pass.PowBits), powExp, itoa(j.a.pow), flag(j.a.codeRequired), j.a.code)
	}
	return keys, args
}

// lineEnter is line_enter's call of one join alone.
func (sh ShardKeys) lineEnter(userID string, a arrival, pass ticketrush.JoinPass, l UserLimit, now time.Time) (keys, args []string) {
	return lineEnters([]enterJoin{{sh: sh, user: userID, a: a, pass: pass, l: l, now: now}})
}

// lineHeads is line_heads's call: the first count fans of shard sh.
func (sh ShardKeys) lineHeads(count int) (keys, args []string) {
	return []string{sh.Places(), sh.Alive(), sh.Order(), sh.Drawn(), sh.Shown()}, []string{itoa(count)}
}

// lineAdmit is line_admit's call: one admission round of at most batch over the candidates merged from
// every shard's head, in seq order, with the waiting fans counted in every shard.
// mode 'first' admits the one candidate only if nobody is ahead of them, and leaves the waiting count as
// it is (a join to an empty line).
// shown are the marks of fans shown up in their shards (line_heads) that this round takes off the watch.
func (c ConcertKeys) lineAdmit(now time.Time, batch int, waiting int64, mode string, shown []string, candidates []lineFan) (keys, args []string) {
	keys = []string{c.Cfg(), c.Active(), c.ActiveSeq(), c.Head(), c.Bucket(), c.Admitted(), c.Left(), c.LeftLog(),
		c.Events(), c.Inventory(), c.Holds(), c.Abandoned(), c.NoShow(), c.LineWaiting(), c.Draw(), c.Quit(), c.Owed()}
	args = make([]string, 0, 5+3*len(candidates))
	args = append(args, millis(now), itoa(batch), i64toa(waiting), mode, strings.Join(shown, ","))
	for _, f := range candidates {
		args = append(args, f.user, utoa(f.seq), i64toa(f.seen))
	}
	return keys, args
}

// linePop is line_pop's call: the fans that left the line take their place out of shard sh, those the
// round admitted with their tokens (tokens: user -> the token line_pop keeps, Token), and the shown marks
// the round applied are cleared.
func (sh ShardKeys) linePop(fans []lineFan, tokens map[string]string, shown []string) (keys, args []string) {
	args = make([]string, 0, 1+3*len(fans))
	args = append(args, strings.Join(shown, ","))
	for _, f := range fans {
		args = append(args, f.user, utoa(f.seq), tokens[f.user])
	}
	return []string{sh.Places(), sh.Alive(), sh.Order(), sh.Drawn(), sh.Token(), sh.Shown()}, args
}

// lineMigrate is line_migrate's call: at most batch fans of the line wait (layout version 1) move into
// places and order (a line of one slot's keys, or a shard's).
func lineMigrate(wait, places, order string, batch int) (keys, args []string) {
	return []string{wait, places, order}, []string{itoa(batch)}
}

// lineSeal is line_seal's call: shard sh's pre-queue closes.
func (sh ShardKeys) lineSeal() (keys, args []string) { return []string{sh.Draw(), sh.Prequeue()}, nil }

// linePlace is line_place's call: the entrants of shard sh in a batch of the draw, each at its seq.
func (sh ShardKeys) linePlace(fans []lineFan) (keys, args []string) {
	args = make([]string, 0, 2*len(fans))
	for _, f := range fans {
		args = append(args, f.user, utoa(f.seq))
	}
	return []string{sh.Places(), sh.Prequeue(), sh.Drawn()}, args
}

// prequeueLeave is prequeue_leave's call on shard sh of a sharded line: the user leaves its pre-queue.
func (sh ShardKeys) prequeueLeave(userID string, now time.Time) (keys, args []string) {
	return []string{sh.Prequeue(), sh.Draw(), sh.Events()}, []string{userID, millis(now)}
}

// lineLeave is line_leave's call: the user leaves shard sh's part of the line with the token of seq.
func (sh ShardKeys) lineLeave(userID string, seq uint64) (keys, args []string) {
	return []string{sh.Places(), sh.Alive(), sh.Token()}, []string{userID, utoa(seq)}
}

// lineLeft is line_left's call: seq of the user is not, or no longer, in the line (from 'LEAVE', the
// fan's leave, or 'SKIP').
func (c ConcertKeys) lineLeft(userID string, seq uint64, from string, now time.Time) (keys, args []string) {
	keys = []string{c.Left(), c.LeftLog(), c.LeftN(), c.Events(), c.Head(), c.Active(), c.ActiveSeq(), c.Quit(), c.Owed()}
	return keys, []string{userID, utoa(seq), from, millis(now)}
}

// powArgs is what a join carries past the proof-of-work gate as the join scripts take it: the checked
// challenge's id ("" none, "-" a proof that failed the check) and its expiry (ms, "0" without one).
func powArgs(pass ticketrush.JoinPass) (id, expires string) {
	id, expires = pass.PowID, "0"
	if pass.PowInvalid {
		id = "-"
	}
	if !pass.PowExpires.IsZero() {
		expires = millis(pass.PowExpires)
	}
	return id, expires
}

// queueLeave is queue_leave's call: the user gives back the token of arrival seq.
func (c ConcertKeys) queueLeave(userID string, seq uint64, now time.Time) (keys, args []string) {
	keys = []string{c.Places(), c.Active(), c.ActiveSeq(), c.Left(), c.LeftLog(), c.LeftN(), c.Events()}
	return keys, []string{userID, utoa(seq), millis(now)}
}

// queueStatus is queue_status's call: the state of the token of claims.
func (c ConcertKeys) queueStatus(claims ticketrush.QueueClaims, now time.Time) (keys, args []string) {
	keys = []string{c.Places(), c.Active(), c.ActiveSeq(), c.Done(), c.Inventory(), c.Head(), c.Left()}
	return keys, []string{claims.UserID, utoa(claims.Seq), millis(now)}
}

// queueTick is queue_tick's call: one admission round of at most batch.
func (c ConcertKeys) queueTick(now time.Time, batch int, stock ...string) (keys, args []string) {
	keys = []string{c.Cfg(), c.Places(), c.Active(), c.ActiveSeq(), c.Head(), c.Bucket(), c.Admitted(), c.Left(), c.LeftLog(),
		c.Events(), c.Draw(), c.Inventory(), c.Holds(), c.Abandoned(), c.NoShow(), c.Seen(), c.Seq(), c.Order(), c.Drawn()}
	keys = append(keys, stock...)
	return keys, []string{millis(now), itoa(batch)}
}

// queueSeen is queue_seen's call: the fans of arrivals seqs were seen at now.
func (c ConcertKeys) queueSeen(seqs []uint64, now time.Time) (keys, args []string) {
	args = make([]string, 0, 1+len(seqs))
	args = append(args, millis(now))
	for _, seq := range seqs {
		args = append(args, utoa(seq))
	}
	return []string{c.Cfg(), c.Seen(), c.Seq()}, args
}

// queueSnapshot is queue_snapshot's call: the shared state and up to limit leaves after ordinal after.
func (c ConcertKeys) queueSnapshot(after uint64, limit int, now time.Time) (keys, args []string) {
	keys = []string{c.Cfg(), c.Head(), c.Seq(), c.Admitted(), c.Places(), c.Active(), c.LeftLog(), c.Inventory(), c.Holds(),
		c.Abandoned(), c.LineWaiting()}
	return keys, []string{utoa(after), itoa(limit), millis(now)}
}

// queueConfigure is queue_configure's call: the admission settings of q.
func (c ConcertKeys) queueConfigure(q ticketrush.QueueSettings, now time.Time) (keys, args []string) {
	keys = []string{c.Cfg(), c.Events()}
	args = []string{itoa(q.ActiveCapacity), itoa(q.AdmitPerSecond), flag(q.Paused), millis(now), itoa(q.JoinPowBits),
		flag(q.AccessCodeRequired), itoa(q.ActivePerSeat), ms(q.AbandonAfter), ms(q.NoShow)}
	return keys, args
}

// drawSeal is draw_seal's call; entrants is the sum of a sharded line's shard counts (-1: a line of one
// slot, whose pre zset draw_seal counts).
func (c ConcertKeys) drawSeal(entrants int64, now time.Time) (keys, args []string) {
	n := ""
	if entrants >= 0 {
		n = i64toa(entrants)
	}
	return []string{c.Cfg(), c.Seq(), c.Prequeue(), c.Draw(), c.Events()}, []string{millis(now), n}
}

// drawPlace is draw_place's call: a batch of entrants starting after draw place from.
// With inline false (a line spread over shards) the batch is in the shards already (line_place).
func (c ConcertKeys) drawPlace(from int64, batch []draw.Entrant, digest string, inline bool, now time.Time) (keys, args []string) {
	keys = []string{c.Places(), c.Draw(), c.DrawKeys(), c.Events(), c.Drawn()}
	args = make([]string, 0, 5+len(batch))
	args = append(args, i64toa(from), drawKeysValue(batch), digest, millis(now), flag(inline))
	for _, e := range batch {
		args = append(args, e.User)
	}
	return keys, args
}

// drawRead is draw_read's call: a page of count entrants of the pre-queue pre in direction dir, after
// the user last read and their score then ("" and "" for the first page of dir).
func drawRead(pre, dir, score, last string, count int64) (keys, args []string) {
	return []string{pre}, []string{dir, score, last, i64toa(count)}
}

// drawStatus is draw_status's call: the state of the user's pre-queue token.
func (c ConcertKeys) drawStatus(userID string, now time.Time) (keys, args []string) {
	keys = []string{c.Prequeue(), c.Draw(), c.Places(), c.Active(), c.ActiveSeq(), c.Head(), c.Left()}
	return keys, []string{userID, millis(now)}
}

// prequeueLeave is prequeue_leave's call: the user leaves the pre-queue.
func (c ConcertKeys) prequeueLeave(userID string, now time.Time) (keys, args []string) {
	return []string{c.Prequeue(), c.Draw(), c.Events()}, []string{userID, millis(now)}
}

// pointsCharge is points_charge's call: amount onto the user's balance as charge chargeID, with the
// Idempotency-Key idemKey ("" none) and the request's fingerprint, under the rate l.
func (w WalletKeys) pointsCharge(userID string, amount int64, chargeID, idemKey, fingerprint string, l UserLimit, now time.Time) (keys, args []string) {
	keys = []string{w.Balances(), w.Idempotency(userID, idemKey), w.Events(), w.UserRate(userID)}
	args = []string{userID, i64toa(amount), chargeID, millis(now), idemKey, fingerprint, idempotencyTTL(),
		strconv.Itoa(ticketrush.MaxBalance), itoa(l.Rate), itoa(l.Burst)}
	return keys, args
}

// walletDebit is wallet_debit's call: the price of reservation resID leaves the user's balance.
func (w WalletKeys) walletDebit(userID, resID string, amount int64, now time.Time) (keys, args []string) {
	return w.money(), []string{userID, resID, i64toa(amount), ticketrush.PaymentID(resID), millis(now)}
}

// walletRefund is wallet_refund's call: the debit of reservation resID goes back.
func (w WalletKeys) walletRefund(userID, resID string, now time.Time) (keys, args []string) {
	return w.money(), []string{userID, resID, ticketrush.RefundID(resID), millis(now)}
}

// money is the keys of wallet_debit and wallet_refund.
func (w WalletKeys) money() []string {
	return []string{w.Balances(), w.Debits(), w.Refunds(), w.Events()}
}

// paymentRemember is payment_remember's call: step ('reserve', 'finish' or 'release') of the user's
// Idempotency-Key key for the request of fingerprint, answered by payment ref (created: a creation) or
// by the refusal refused.
func (w WalletKeys) paymentRemember(step, userID, key, fingerprint, ref string, created bool, refused ticketrush.Code, now time.Time) (keys, args []string) {
	keys = []string{w.Idempotency(userID, key), w.Events()}
	return keys, []string{userID, key, fingerprint, ref, flag(created), idempotencyTTL(), millis(now), step, string(refused)}
}

// idempotencyTTL is the lifetime of an idempotency record, in seconds.
func idempotencyTTL() string { return strconv.Itoa(int(ticketrush.IdempotencyTTL / time.Second)) }

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

// UserLimit is the per-user rate of the state-changing scripts (USER_RATE_LIMIT/s, bursts of
// USER_RATE_BURST); Rate 0 turns it off.
type UserLimit struct{ Rate, Burst int }

func itoa(n int) string         { return strconv.Itoa(n) }
func utoa(n uint64) string      { return strconv.FormatUint(n, 10) }
func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// arrival is line_arrive's reply.
type arrival struct {
	status       ticketrush.QueueStatus // ACTIVE, ARRIVE, PREQUEUE (seq 0: enter the shard's pre-queue) or SEAL
	seq          uint64
	till         int64
	code         string // '' none, '1' valid for the fan, '0' not
	pow          int
	codeRequired bool
	room         bool
}

// lineFan is one waiting fan of a sharded line, as line_heads read them.
type lineFan struct {
	user  string
	seq   uint64
	seen  int64 // ms, 0: never
	shard int
}
