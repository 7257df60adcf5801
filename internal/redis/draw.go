package redis

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The on-sale's Redis side: sealing the pre-queue, placing the draw in batches, the state of pre-queue
// tokens, and reading the draw back (entrants, keys) for the scheduler and the public endpoints.

// SealDraw closes a sale's pre-queue if its opening has passed (once; see lua/draw_seal.lua) and
// returns the draw's state; Sealed is false before the opening.
func (s *Draws) SealDraw(ctx context.Context, concertID string, now time.Time) (ticketrush.DrawState, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return ticketrush.DrawState{}, err
	}
	st, err := w.line.seal(ctx, now)
	if err != nil {
		return ticketrush.DrawState{}, fmt.Errorf("seal draw %s: %w", concertID, err)
	}
	return st, nil
}

// sealReply reads draw_seal's {sealed (0|1), base, n, placed, drawnAt}.
func sealReply(msg rueidis.RedisMessage) (ticketrush.DrawState, error) {
	r, err := reply(msg, 5)
	if err != nil {
		return ticketrush.DrawState{}, err
	}
	st := ticketrush.DrawState{Sealed: r.flag(0), Base: r.int(1), Entrants: r.int(2), Placed: r.int(3), DrawnAt: fromMillis(r.int(4))}
	if r.err != nil {
		return ticketrush.DrawState{}, r.err
	}
	return st, nil
}

// PlaceDraw places one batch of entrants that starts after draw place from; it returns the cursor
// after the call and whether this call applied the batch (false: another scheduler was there first).
func (s *Draws) PlaceDraw(ctx context.Context, concertID string, from int64, batch []draw.Entrant, digest string, now time.Time) (int64, bool, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return 0, false, err
	}
	if placed, done, err := w.line.place(ctx, from, batch); err != nil {
		return 0, false, fmt.Errorf("place draw %s: %w", concertID, err)
	} else if done {
		return placed, false, nil // another drawer placed this batch
	}
	keys, args := w.line.drawPlace(from, batch, digest, now)
	msg, err := s.exec(ctx, s.drawPlace, keys, args)
	if err != nil {
		return 0, false, fmt.Errorf("place draw %s: %w", concertID, err)
	}
	placed, applied, err := placeReply(msg)
	if err != nil {
		return 0, false, fmt.Errorf("place draw %s: %w", concertID, err)
	}
	return placed, applied, nil
}

// placeReply reads draw_place's {placed, applied (0|1)}.
func placeReply(msg rueidis.RedisMessage) (int64, bool, error) {
	r, err := reply(msg, 2)
	if err != nil {
		return 0, false, err
	}
	placed, applied := r.int(0), r.flag(1)
	if r.err != nil {
		return 0, false, r.err
	}
	return placed, applied, nil
}

// PrequeueStatus returns the state of a user's pre-queue token (seq 0) and, once the draw placed them,
// their arrival seq.
func (s *Draws) PrequeueStatus(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.TokenState, uint64, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return ticketrush.TokenState{}, 0, err
	}
	st, seq, err := w.line.prequeueStatus(ctx, userID, now)
	if err != nil {
		return ticketrush.TokenState{}, 0, fmt.Errorf("pre-queue status %s: %w", concertID, err)
	}
	return st, seq, nil
}

// prequeueStatusReply reads draw_status's {status, seq, position, activeUntil}.
func prequeueStatusReply(msg rueidis.RedisMessage) (ticketrush.TokenState, uint64, error) {
	r, err := reply(msg, 4)
	if err != nil {
		return ticketrush.TokenState{}, 0, err
	}
	st := ticketrush.TokenState{
		Status: r.status(0, ticketrush.StatusPrequeue, ticketrush.StatusWaiting, ticketrush.StatusActive, ticketrush.StatusExpired),
	}
	seq := uint64(r.int(1))
	st.Position, st.ActiveUntil = r.int(2), fromMillis(r.int(3))
	if r.err != nil {
		return ticketrush.TokenState{}, 0, r.err
	}
	return st, seq, nil
}

// LeavePrequeue takes a user out of a sale's pre-queue before it is sealed; it reports PREQUEUE when
// they left, "" when they were not in it or it was sealed already.
func (s *Draws) LeavePrequeue(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.QueueStatus, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return "", err
	}
	keys, args := w.line.prequeueLeave(userID, now)
	msg, err := s.exec(ctx, s.prequeueLeave, keys, args)
	if err != nil {
		return "", fmt.Errorf("leave pre-queue %s: %w", concertID, err)
	}
	return prequeueLeaveReply(msg)
}

// prequeueLeaveReply reads prequeue_leave's 'PREQUEUE' or 'NONE' ("").
func prequeueLeaveReply(msg rueidis.RedisMessage) (ticketrush.QueueStatus, error) {
	return leftFrom(msg, "leave pre-queue reply", ticketrush.StatusPrequeue)
}

// DrawState reads a concert's draw (a plain read of one hash; the seed is not part of it).
func (s *Draws) DrawState(ctx context.Context, concertID string) (ticketrush.DrawState, error) {
	k := s.keys.Concert(concertID)
	msg, err := s.client.Do(ctx, s.client.B().Hmget().Key(k.Draw()).Field(drawFields[:]...).Build()).ToMessage()
	if err != nil {
		return ticketrush.DrawState{}, fmt.Errorf("draw state %s: %w", concertID, unavailable(err))
	}
	st, err := drawStateReply(msg)
	if err != nil {
		return ticketrush.DrawState{}, fmt.Errorf("draw state %s: %w", concertID, err)
	}
	return st, nil
}

// drawFields are the fields of a draw hash DrawState reads, in the order drawStateReply reads them.
var drawFields = [...]string{"sealed", "base", "n", "placed", "digest", "drawnAt"}

// drawStateReply reads the HMGET of drawFields: each field absent (nil: not written yet) or a string;
// sealed is '1' when there, and base, n, placed and drawnAt are integers.
func drawStateReply(msg rueidis.RedisMessage) (ticketrush.DrawState, error) {
	items, err := msg.ToArray()
	if err != nil {
		return ticketrush.DrawState{}, fmt.Errorf("draw fields: %w", err)
	}
	if len(items) != len(drawFields) {
		return ticketrush.DrawState{}, fmt.Errorf("%d draw fields, want %d", len(items), len(drawFields))
	}
	var vals [len(drawFields)]string
	var nums [len(drawFields)]int64
	for i, item := range items {
		if item.IsNil() {
			continue
		}
		v, err := item.ToString()
		if err != nil {
			return ticketrush.DrawState{}, fmt.Errorf("draw field %s: %w", drawFields[i], err)
		}
		vals[i] = v
		if f := drawFields[i]; f != "sealed" && f != "digest" {
			if nums[i], err = strconv.ParseInt(v, 10, 64); err != nil {
				return ticketrush.DrawState{}, fmt.Errorf("draw field %s: %w", f, err)
			}
		}
	}
	if vals[0] != "" && vals[0] != "1" {
		return ticketrush.DrawState{}, fmt.Errorf("draw field sealed: %q is not 1", vals[0])
	}
	return ticketrush.DrawState{Sealed: vals[0] == "1", Base: nums[1], Entrants: nums[2], Placed: nums[3], Digest: vals[4],
		DrawnAt: fromMillis(nums[5])}, nil
}

// PrequeueSize is the number of the pre-queue's entrants so far.
func (s *Draws) PrequeueSize(ctx context.Context, concertID string) (int64, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return 0, err
	}
	cmds := make(rueidis.Commands, w.line.shards()) // every pre-queue of the line, one round trip
	for n := range cmds {
		cmds[n] = s.client.B().Zcard().Key(w.line.prequeue(n)).Build()
	}
	var sum int64
	for _, r := range s.client.DoMulti(ctx, cmds...) {
		v, err := r.AsInt64()
		if err != nil {
			return 0, fmt.Errorf("pre-queue size %s: %w", concertID, unavailable(err))
		}
		sum += v
	}
	return sum, nil
}

// Entrants reads a page of a sealed pre-queue's entrants, count of them (fewer on the last page) from
// cursor ("" for the first page), and the cursor of the next page ("" after the last). The pages read
// each shard's pre-queue (the line's, for a line of one slot) in two parts, the entrants not placed yet
// then the ones placed (lua/draw_read.lua), each page from just after the last entrant read: placing
// moves entrants from the first part to the second while another drawer reads, which shifts the ranks
// of the others (a page by rank would skip some and repeat others), not the order within each part. An
// entrant placed after the page that had them in the first part comes again in the second: the draw
// counts each user once (draw.Seed.Draw).
func (s *Draws) Entrants(ctx context.Context, concertID, cursor string, count int64) ([]string, string, error) {
	if count < 1 {
		return nil, "", fmt.Errorf("entrants %s: a page of %d", concertID, count)
	}
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return nil, "", err
	}
	shards := w.line.shards()
	cur, err := parseEntrantsCursor(cursor)
	if err != nil || cur.shard >= shards {
		return nil, "", fmt.Errorf("entrants %s: cursor %q of a line of %d shards", concertID, cursor, shards)
	}
	keys, args := drawRead(w.line.prequeue(cur.shard), cur.dir, cur.score, cur.last, count)
	msg, err := s.exec(ctx, s.drawRead, keys, args)
	if err != nil {
		return nil, "", fmt.Errorf("entrants %s: %w", concertID, err)
	}
	users, score, last, err := drawReadReply(msg)
	if err != nil {
		return nil, "", fmt.Errorf("entrants %s: %w", concertID, err)
	}
	switch {
	case last != "":
		cur.score, cur.last = score, last
	case cur.dir == readUp:
		cur = entrantsCursor{shard: cur.shard, dir: readDown}
	case cur.shard+1 < shards:
		cur = entrantsCursor{shard: cur.shard + 1, dir: readUp}
	default:
		return users, "", nil
	}
	return users, cur.String(), nil
}

// drawReadReply reads draw_read's {users, score, last}: score a number when last is not "".
func drawReadReply(msg rueidis.RedisMessage) (users []string, score, last string, err error) {
	r, err := reply(msg, 3)
	if err != nil {
		return nil, "", "", err
	}
	items, err := r.items[0].ToArray()
	if err != nil {
		return nil, "", "", fmt.Errorf("reply item 0: %w", err)
	}
	users = make([]string, len(items))
	for i, item := range items {
		if users[i], err = item.ToString(); err != nil {
			return nil, "", "", fmt.Errorf("reply item 0, user %d: %w", i, err)
		}
	}
	score, last = r.str(1), r.str(2)
	if r.err != nil {
		return nil, "", "", r.err
	}
	if (last == "") != (score == "") || (last != "" && !validScore(score)) {
		return nil, "", "", fmt.Errorf("reply: score %q of user %q", score, last)
	}
	return users, score, last, nil
}

// The parts draw_read reads: the entrants not placed yet, and the ones placed.
const (
	readUp   = "up"
	readDown = "down"
)

// entrantsCursor is where Entrants reads on: a shard, a part (dir), and the user last read there with
// their score then ("" before the part's first page). It is written "<shard>:<dir>:<score>:<last>";
// "" is shard 0's first page.
type entrantsCursor struct {
	shard            int
	dir, score, last string
}

func (c entrantsCursor) String() string {
	return strconv.Itoa(c.shard) + ":" + c.dir + ":" + c.score + ":" + c.last
}

func parseEntrantsCursor(cursor string) (entrantsCursor, error) {
	if cursor == "" {
		return entrantsCursor{dir: readUp}, nil
	}
	parts := strings.SplitN(cursor, ":", 4)
	if len(parts) != 4 {
		return entrantsCursor{}, fmt.Errorf("entrants cursor %q", cursor)
	}
	shard, err := strconv.Atoi(parts[0])
	c := entrantsCursor{shard: shard, dir: parts[1], score: parts[2], last: parts[3]}
	if err != nil || shard < 0 || (c.dir != readUp && c.dir != readDown) || (c.last == "") != (c.score == "") ||
		(c.last != "" && !validScore(c.score)) {
		return entrantsCursor{}, fmt.Errorf("entrants cursor %q", cursor)
	}
	return c, nil
}

// validScore reports whether v is a finite number, as ZSCORE writes a score.
func validScore(v string) bool {
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// LeaseDraw takes or renews the lease on computing a concert's draw for owner; it reports whether
// owner holds it. The lease only spares schedulers duplicate work: draw_place's cursor keeps the
// placing exactly-once whoever holds it.
func (s *Draws) LeaseDraw(ctx context.Context, concertID, owner string, ttl time.Duration) (bool, error) {
	key := s.keys.Concert(concertID).DrawLock()
	err := s.client.Do(ctx, s.client.B().Set().Key(key).Value(owner).Nx().Px(ttl).Build()).Error()
	if err == nil {
		return true, nil
	}
	if !rueidis.IsRedisNil(err) {
		return false, fmt.Errorf("lease draw %s: %w", concertID, unavailable(err))
	}
	holder, err := s.client.Do(ctx, s.client.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lease draw %s: %w", concertID, unavailable(err))
	}
	if holder != owner {
		return false, nil
	}
	if err := s.client.Do(ctx, s.client.B().Pexpire().Key(key).Milliseconds(ttl.Milliseconds()).Build()).Error(); err != nil {
		return false, fmt.Errorf("lease draw %s: %w", concertID, unavailable(err))
	}
	return true, nil
}

// DrawPlaceOf finds a key among the first n keys of a concert's draw, which are in ascending order (the
// draw order): its 1-based draw place, or 0 when no entrant has it. A binary search of the keys string,
// one 32-byte read a step: about 20 round trips for a million entrants.
func (s *Draws) DrawPlaceOf(ctx context.Context, concertID string, key draw.Key, n int64) (int64, error) {
	dkeys := s.keys.Concert(concertID).DrawKeys()
	lo, hi := int64(0), n // the place, if any, is in [lo, hi) (0-based)
	for lo < hi {
		mid := lo + (hi-lo)/2
		raw, err := s.client.Do(ctx, s.client.B().Getrange().Key(dkeys).Start(mid*draw.KeySize).
			End((mid+1)*draw.KeySize-1).Build()).AsBytes()
		if err != nil {
			return 0, fmt.Errorf("draw place %s: %w", concertID, unavailable(err))
		}
		if len(raw) != draw.KeySize {
			return 0, fmt.Errorf("draw place %s: key %d is %d bytes, want %d", concertID, mid, len(raw), draw.KeySize)
		}
		switch c := bytes.Compare(raw, key[:]); {
		case c == 0:
			return mid + 1, nil
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, nil
}

// drawKeysChunk is how many keys one read of the keys string fetches.
const drawKeysChunk = 2048

// WriteDrawKeys writes the first n keys of a concert's draw to w as hex lines, in draw order, reading
// them from Redis a chunk at a time (a million keys are 32 MB in Redis, 65 MB as text), each read
// bounded by call: the whole may take as long as w takes the text.
func (s *Draws) WriteDrawKeys(ctx context.Context, concertID string, n int64, call time.Duration, w io.Writer) error {
	key := s.keys.Concert(concertID).DrawKeys()
	line := make([]byte, 0, drawKeysChunk*(2*draw.KeySize+1))
	for from := int64(0); from < n; from += drawKeysChunk {
		to := min(from+drawKeysChunk, n)
		rctx, cancel := context.WithTimeout(ctx, call)
		raw, err := s.client.Do(rctx, s.client.B().Getrange().Key(key).Start(from*draw.KeySize).End(to*draw.KeySize-1).Build()).AsBytes()
		cancel()
		if err != nil {
			return fmt.Errorf("draw keys %s: %w", concertID, unavailable(err))
		}
		if int64(len(raw)) != (to-from)*draw.KeySize {
			return fmt.Errorf("draw keys %s: %d bytes at key %d, want %d", concertID, len(raw), from, (to-from)*draw.KeySize)
		}
		line = line[:0]
		for i := 0; i < len(raw); i += draw.KeySize {
			var k draw.Key
			copy(k[:], raw[i:i+draw.KeySize])
			line = append(line, k.Hex()...)
			line = append(line, '\n')
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}
