// Package repair holds the tools that prove and repair the agreement of Redis and Postgres: reconcile
// compares the two as of one stream position, restore rebuilds Redis from Postgres. Both read and
// write Redis through internal/redis, the home of its layout.
package repair

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Placements is the durable catalog as RecordPlacements reads and writes it.
type Placements interface {
	Concerts(ctx context.Context) ([]ticketrush.Concert, error)
	// RecordPlacement records a concert's placement unless it has one; it returns the one recorded.
	RecordPlacement(ctx context.Context, concertID, slots string) (ticketrush.Placement, error)
}

// Source is the durable record as restore reads it (and records the placements it lacks).
type Source interface {
	Placements
	Reservations(ctx context.Context, concertID string) ([]ticketrush.ReservationRecord, error)
	Balances(ctx context.Context) (map[string]int64, error)
	Movements(ctx context.Context, typ ticketrush.LedgerType) ([]ticketrush.LedgerEntry, error)
	IdempotencySince(ctx context.Context, since time.Time) ([]ticketrush.IdempotencyRecord, error)
	QueueMarks(ctx context.Context) (map[string]ticketrush.QueueMark, error)
	AccessCodes(ctx context.Context, concertID string) (map[string]string, error)
	Prequeue(ctx context.Context, concertID string) ([]ticketrush.PrequeueEntry, error)
	Draw(ctx context.Context, concertID string) (ticketrush.DrawRecord, bool, error)
	DrawPlaces(ctx context.Context, concertID string) ([]ticketrush.DrawPlace, error)
}

// ErrRedisWhole is a restore refused because Redis holds the whole state already: restoring over a
// live Redis would replace the newest changes with the record's older copy.
var ErrRedisWhole = errors.New("redis holds the whole state (the state marker is there); restore refuses to overwrite it without --force")

// RestoreReport says what a restore wrote.
type RestoreReport struct {
	Concerts, Reservations, Held, Sold, Users, IdempotencyKeys int
	Skipped                                                    []string // reservations the record holds too little of
	AccessCodes                                                int
}

// Restore rebuilds the sale's state in Redis from the durable record: the catalog and queue settings,
// each concert's seats in the slots of its recorded placement (RecordPlacements' first for one without),
// every reservation with its seat (sold, held, being paid), every balance with the debits and refunds
// that keep payments idempotent, the Idempotency-Key records still in their 24 h, and each queue's
// arrival sequence above every token ever issued. Queue lines and active sets are not in the record:
// fans join again. Each concert and each wallet shard is written in one MULTI, its old keys (and its
// stream, with what an emptied Redis recorded meanwhile) deleted first. The state marker goes last.
// Unless force, it refuses a Redis whose marker is there.
func Restore(ctx context.Context, rdb rueidis.Client, src Source, prefix string, force bool, now time.Time) (RestoreReport, error) {
	var rep RestoreReport
	state := redis.NewStateMarker(rdb, prefix)
	whole, err := state.Present(ctx)
	if err != nil {
		return rep, err
	}
	if whole && !force {
		return rep, ErrRedisWhole
	}
	keys := redis.NewKeys(prefix)
	concerts, err := src.Concerts(ctx)
	if err != nil {
		return rep, err
	}
	marks, err := src.QueueMarks(ctx)
	if err != nil {
		return rep, err
	}
	for _, c := range concerts {
		if c.Placement, err = recordPlacement(ctx, rdb, src, keys.Concert(c.ID), c); err != nil {
			return rep, err
		}
		res, err := src.Reservations(ctx, c.ID)
		if err != nil {
			return rep, err
		}
		rc, err := redis.RestoreConcert(ctx, rdb, keys.Concert(c.ID), c, res, marks[c.ID])
		rep.Reservations, rep.Held, rep.Sold = rep.Reservations+rc.Reservations, rep.Held+rc.Held, rep.Sold+rc.Sold
		rep.Skipped = append(rep.Skipped, rc.Skipped...)
		if err != nil {
			return rep, fmt.Errorf("restore concert %s: %w", c.ID, err)
		}
		codes, err := src.AccessCodes(ctx, c.ID)
		if err != nil {
			return rep, err
		}
		if err := redis.RestoreAccessCodes(ctx, rdb, keys.Concert(c.ID), codes); err != nil {
			return rep, fmt.Errorf("restore access codes %s: %w", c.ID, err)
		}
		rep.AccessCodes += len(codes)
		if err := restoreOnSale(ctx, rdb, keys.Concert(c.ID), c, src); err != nil {
			return rep, fmt.Errorf("restore sale of concert %s: %w", c.ID, err)
		}
		rep.Concerts++
	}
	if err := restoreWallets(ctx, rdb, keys, src, now, &rep); err != nil {
		return rep, err
	}
	return rep, state.Write(ctx, "restore", now)
}

// RecordPlacements records the placement of every concert whose record has none (created before
// placements were recorded): the seat slots Redis holds for it, else new ones (redis.SeatPlacement).
// Each is recorded once: a recorded placement is never written over, so every process and restore
// agree on it from then on. serve runs it at every start, after the migrations (docs/scaleout.md,
// "Placement").
func RecordPlacements(ctx context.Context, rdb rueidis.Client, rec Placements, prefix string) error {
	concerts, err := rec.Concerts(ctx)
	if err != nil {
		return err
	}
	keys := redis.NewKeys(prefix)
	for _, c := range concerts {
		if _, err := recordPlacement(ctx, rdb, rec, keys.Concert(c.ID), c); err != nil {
			return err
		}
	}
	return nil
}

// recordPlacement is c's recorded placement, recorded first when c has none.
func recordPlacement(ctx context.Context, rdb rueidis.Client, rec Placements, k redis.ConcertKeys, c ticketrush.Concert) (ticketrush.Placement, error) {
	if c.Placement.Recorded {
		return c.Placement, nil
	}
	slots, err := redis.SeatPlacement(ctx, rdb, k, c)
	if err != nil {
		return c.Placement, fmt.Errorf("record placement of %s: %w", c.ID, err)
	}
	return rec.RecordPlacement(ctx, c.ID, slots)
}

// Print writes the report in words.
func (r RestoreReport) Print(w io.Writer) {
	fmt.Fprintf(w, "restored %d concerts, %d reservations (%d held or being paid, %d sold), %d balances, %d idempotency keys\n",
		r.Concerts, r.Reservations, r.Held, r.Sold, r.Users, r.IdempotencyKeys)
	for _, id := range r.Skipped {
		fmt.Fprintf(w, "skipped reservation %s: the record lacks its hold (see the dead-letter streams)\n", id)
	}
}

func restoreWallets(ctx context.Context, rdb rueidis.Client, keys redis.Keys, src Source, now time.Time, rep *RestoreReport) error {
	balances, err := src.Balances(ctx)
	if err != nil {
		return err
	}
	shards := make([]redis.WalletShardState, redis.WalletShards)
	for i := range shards {
		shards[i].Balances = map[string]int64{}
	}
	for user, b := range balances {
		shards[redis.WalletShard(user)].Balances[user] = b
		rep.Users++
	}
	for _, typ := range []ticketrush.LedgerType{ticketrush.LedgerPayment, ticketrush.LedgerRefund} {
		moves, err := src.Movements(ctx, typ)
		if err != nil {
			return err
		}
		for _, m := range moves {
			sh := &shards[redis.WalletShard(m.UserID)]
			if typ == ticketrush.LedgerPayment {
				sh.Debits = append(sh.Debits, m)
			} else {
				sh.Refunds = append(sh.Refunds, m)
			}
		}
	}
	idem, err := src.IdempotencySince(ctx, now.Add(-ticketrush.IdempotencyTTL))
	if err != nil {
		return err
	}
	for _, r := range idem {
		sh := &shards[redis.WalletShard(r.UserID)]
		sh.IdempotencyKeys = append(sh.IdempotencyKeys, r)
	}
	for i, sh := range shards {
		n, err := redis.RestoreWalletShard(ctx, rdb, keys.WalletShard(i), sh, now)
		rep.IdempotencyKeys += n
		if err != nil {
			return fmt.Errorf("restore wallet shard %d: %w", i, err)
		}
	}
	return nil
}

// restoreOnSale writes back a concert's sale: its opening times and seed (so the commitment is
// unchanged), its pre-queue's entrants as the record has them (so a draw not yet run still runs, at its
// opening), and a completed draw with its keys, recomputed from the seed and the recorded places (the
// draw is a pure function of them). The line itself restarts empty like every line.
func restoreOnSale(ctx context.Context, rdb rueidis.Client, k redis.ConcertKeys, c ticketrush.Concert, src Source) error {
	if c.Sale == nil {
		return nil
	}
	entries, err := src.Prequeue(ctx, c.ID)
	if err != nil {
		return err
	}
	d, drawn, err := src.Draw(ctx, c.ID)
	if err != nil {
		return err
	}
	if !drawn {
		return redis.RestoreSale(ctx, rdb, k, c, entries, nil, nil)
	}
	places, err := src.DrawPlaces(ctx, c.ID)
	if err != nil {
		return err
	}
	if int64(len(places)) != d.Entrants {
		return fmt.Errorf("the record has %d draw places of %d entrants; wait for the write-behind and restore again", len(places), d.Entrants)
	}
	seed := draw.Seed(c.Sale.Seed)
	order := make([]draw.Entrant, len(places))
	for i, p := range places {
		order[i] = draw.Entrant{User: p.UserID, Key: seed.KeyOf(c.ID, p.UserID)}
	}
	if got := draw.DigestOf(order); got != d.Digest {
		return fmt.Errorf("the recorded places hash to %s, the draw to %s", got, d.Digest)
	}
	return redis.RestoreSale(ctx, rdb, k, c, entries, &d, order)
}
