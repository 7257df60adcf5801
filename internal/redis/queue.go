package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Join puts a fan in a concert's line, or returns their live token's arrival.
func (s *Line) Join(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.JoinResult, error) {
	return s.JoinWith(ctx, concertID, userID, ticketrush.JoinPass{}, now)
}

// JoinWith is Join with what the join carries past the concert's proof-of-work and access-code gates;
// the script checks them (and the user's rate) before anything else.
func (s *Line) JoinWith(ctx context.Context, concertID, userID string, pass ticketrush.JoinPass, now time.Time) (ticketrush.JoinResult, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return ticketrush.JoinResult{}, err
	}
	res, err := w.line.join(ctx, userID, pass, now)
	if err != nil {
		return res, fmt.Errorf("join %s: %w", concertID, err)
	}
	return res, nil
}

// joinReply reads queue_join's {status, seq, activeUntil, created}.
func joinReply(msg rueidis.RedisMessage) (ticketrush.JoinResult, error) {
	r, err := reply(msg, 4)
	if err != nil {
		return ticketrush.JoinResult{}, err
	}
	res := ticketrush.JoinResult{
		Status:      r.status(0, ticketrush.StatusPrequeue, ticketrush.StatusWaiting, ticketrush.StatusActive),
		Seq:         uint64(r.int(1)),
		ActiveUntil: fromMillis(r.int(2)),
		Created:     r.flag(3),
	}
	return res, r.err
}

// Leave takes the token of arrival seq out of the line or the active set. It returns where the token
// was: WAITING, ACTIVE, or "" when it was no longer live.
func (s *Line) Leave(ctx context.Context, concertID, userID string, seq uint64, now time.Time) (ticketrush.QueueStatus, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return "", err
	}
	from, err := w.line.leave(ctx, userID, seq, now)
	if err != nil {
		return "", fmt.Errorf("leave %s: %w", concertID, err)
	}
	return from, nil
}

// leaveReply reads queue_leave's 'WAITING', 'ACTIVE' or 'NONE' ("").
func leaveReply(msg rueidis.RedisMessage) (ticketrush.QueueStatus, error) {
	return leftFrom(msg, "leave reply", ticketrush.StatusWaiting, ticketrush.StatusActive)
}

// leftFrom reads a leave script's reply: the status the token left, one of statuses, or 'NONE' ("")
// for a token no longer live. what names the reply in an error.
func leftFrom(msg rueidis.RedisMessage, what string, statuses ...ticketrush.QueueStatus) (ticketrush.QueueStatus, error) {
	from, err := msg.ToString()
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if from == "NONE" {
		return "", nil
	}
	for _, st := range statuses {
		if from == string(st) {
			return st, nil
		}
	}
	return "", fmt.Errorf("%s: unexpected %q", what, from)
}

// TokenStatus returns the exact state of a token.
func (s *Line) TokenStatus(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	w, err := s.ways(ctx, c.ConcertID)
	if err != nil {
		return ticketrush.TokenState{}, err
	}
	return w.line.status(ctx, c, now)
}

func tokenState(msg rueidis.RedisMessage) (ticketrush.TokenState, error) {
	r, err := reply(msg, 3)
	if err != nil {
		return ticketrush.TokenState{}, fmt.Errorf("token status: %w", err)
	}
	st := ticketrush.TokenState{
		Status: r.status(0, ticketrush.StatusWaiting, ticketrush.StatusActive, ticketrush.StatusExpired, ticketrush.StatusDone,
			ticketrush.StatusSoldOut),
		Position:    r.int(1),
		ActiveUntil: fromMillis(r.int(2)),
	}
	if r.err != nil {
		return ticketrush.TokenState{}, fmt.Errorf("token status: %w", r.err)
	}
	return st, nil
}

// Tick runs one admission round for a concert.
func (s *Line) Tick(ctx context.Context, concertID string, now time.Time, batch int) (ticketrush.TickResult, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return ticketrush.TickResult{}, err
	}
	if !w.carried { // the seat slots' counts, where the line reads them, unless its tick carries them
		if err := w.seats.carry(ctx, now); err != nil {
			return ticketrush.TickResult{}, fmt.Errorf("tick %s: carry inventory: %w", concertID, err)
		}
	}
	res, err := w.line.tick(ctx, now, batch)
	if err != nil {
		return res, fmt.Errorf("tick %s: %w", concertID, err)
	}
	return res, nil
}

// tickReply reads queue_tick's {admitted, lapsed, waiting, active, abandoned, noshows}.
func tickReply(msg rueidis.RedisMessage) (ticketrush.TickResult, error) {
	r, err := reply(msg, 6)
	if err != nil {
		return ticketrush.TickResult{}, err
	}
	res := ticketrush.TickResult{Admitted: int(r.int(0)), Lapsed: int(r.int(1)), Waiting: r.int(2), Active: r.int(3),
		Abandoned: int(r.int(4)), NoShows: int(r.int(5))}
	return res, r.err
}

// Snapshot reads the shared queue state and up to limit leaves after ordinal afterLeave.
func (s *Line) Snapshot(ctx context.Context, concertID string, afterLeave uint64, limit int, now time.Time) (ticketrush.QueueSnapshot, error) {
	keys, args := s.keys.Concert(concertID).queueSnapshot(afterLeave, limit, now)
	msg, err := s.exec(ctx, s.snapshot, keys, args)
	if err != nil {
		return ticketrush.QueueSnapshot{}, fmt.Errorf("queue snapshot %s: %w", concertID, err)
	}
	snap, err := snapshotReply(msg)
	if err != nil {
		return snap, fmt.Errorf("queue snapshot %s: %w", concertID, err)
	}
	return snap, nil
}

// snapshotReply reads queue_snapshot's {found, head, tail, admitted, waiting, active, cap, rate, paused,
// {seq, ordinal, ...}, soldout, available, aps, abandoned, abandon (ms)}.
func snapshotReply(msg rueidis.RedisMessage) (ticketrush.QueueSnapshot, error) {
	r, err := reply(msg, 15)
	if err != nil {
		return ticketrush.QueueSnapshot{}, err
	}
	snap := ticketrush.QueueSnapshot{
		Found:          r.flag(0),
		Head:           uint64(r.int(1)),
		Tail:           uint64(r.int(2)),
		Admitted:       uint64(r.int(3)),
		Waiting:        r.int(4),
		Active:         r.int(5),
		ActiveCapacity: int(r.int(6)),
		AdmitPerSecond: int(r.int(7)),
		Paused:         r.flag(8),
		SoldOut:        r.flag(10),
		SeatsAvailable: r.int(11),
		ActivePerSeat:  int(r.int(12)),
		Abandoned:      r.int(13),
		AbandonAfter:   time.Duration(r.int(14)) * time.Millisecond,
	}
	if r.err != nil {
		return ticketrush.QueueSnapshot{}, r.err
	}
	leaves, err := r.items[9].AsStrSlice()
	if err != nil {
		return ticketrush.QueueSnapshot{}, fmt.Errorf("leaves: %w", err)
	}
	if len(leaves)%2 != 0 {
		return ticketrush.QueueSnapshot{}, fmt.Errorf("leaves: %d items, want pairs", len(leaves))
	}
	for i := 0; i < len(leaves); i += 2 {
		seq, err1 := strconv.ParseUint(leaves[i], 10, 64)
		ord, err2 := strconv.ParseFloat(leaves[i+1], 64)
		if err1 != nil || err2 != nil {
			return ticketrush.QueueSnapshot{}, fmt.Errorf("bad leave %q %q", leaves[i], leaves[i+1])
		}
		snap.Leaves = append(snap.Leaves, ticketrush.Leave{Seq: seq, Ordinal: uint64(ord)})
	}
	return snap, nil
}

// AddAccessCodes adds unclaimed access codes (by hash) to a concert; a hash it has already keeps its owner.
func (s *Store) AddAccessCodes(ctx context.Context, concertID string, hashes []string) error {
	key := s.keys.Concert(concertID).AccessCodes()
	var cmds rueidis.Commands
	for _, h := range hashes {
		cmds = append(cmds, s.client.B().Hsetnx().Key(key).Field(h).Value("").Build())
	}
	for _, r := range s.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("add access codes %s: %w", concertID, unavailable(err))
		}
	}
	return nil
}

// seenChunk is the most arrivals one liveness write carries: a queue_seen call, or an HSET of a sharded
// line's shard. A call's Redis time grows with its arrivals (queue_seen about 1.1 µs each: 110 ms for
// 100,000 in one call), and every other call of the slot waits for it; 1,000 keep a call near a
// millisecond, however many fans an instance saw in its second.
const seenChunk = 1000

// MarkAlive records that the fans of the given WAITING arrivals were seen at now, which an instance
// sends at most once a second per concert for every token it served in that second: queue_seen calls
// of at most seenChunk arrivals each, in order of seq (so that a call's arrivals are neighbours), one
// after the other; or, for a sharded line, one command per shard the fans are in and seenChunk of them.
// A call that fails leaves the chunks after it unwritten: those fans are seen again at their next poll.
func (s *Line) MarkAlive(ctx context.Context, concertID string, seen []ticketrush.Arrival, now time.Time) error {
	if len(seen) == 0 {
		return nil
	}
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return err
	}
	if err := w.line.markAlive(ctx, seen, now); err != nil {
		return fmt.Errorf("mark alive %s: %w", concertID, err)
	}
	return nil
}

// Configure changes a concert's admission settings in Redis, where the tick reads them.
func (s *Store) Configure(ctx context.Context, concertID string, q ticketrush.QueueSettings, now time.Time) error {
	keys, args := s.keys.Concert(concertID).queueConfigure(q, now)
	msg, err := s.exec(ctx, s.configure, keys, args)
	if err == nil {
		err = configureReply(msg)
	}
	if err != nil {
		return fmt.Errorf("configure %s: %w", concertID, err)
	}
	return nil
}

// configureReply checks queue_configure's {cap, rate, paused (0|1), aps}: the settings in force after
// the change, which the caller already has.
func configureReply(msg rueidis.RedisMessage) error {
	r, err := reply(msg, 4)
	if err != nil {
		return err
	}
	r.int(0)
	r.int(1)
	r.flag(2)
	r.int(3)
	return r.err
}
