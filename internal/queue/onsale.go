package queue

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The on-sale (docs/api.md, "On-sale"): pre-queue tokens, the drawn places of entrants, and the drawer that
// runs each concert's draw once, resumably, off the request path.

// OnSaleStore is the on-sale's state in Redis.
type OnSaleStore interface {
	PrequeueStatus(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.TokenState, uint64, error)
	DrawState(ctx context.Context, concertID string) (ticketrush.DrawState, error)
	LeavePrequeue(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.QueueStatus, error)
	DrawPlaceOf(ctx context.Context, concertID string, key draw.Key, n int64) (int64, error)
}

// leavePrequeue gives back a pre-queue token (seq 0): before the seal the fan leaves the pre-queue; once
// the draw placed them, they leave their place in line. Between the two (the pre-queue sealed at the
// opening, this entrant's batch not placed yet) there is nothing yet to leave: the leave waits for the
// place, asking again every placeRetry, and answers ErrUnavailable (503, retry) if ctx ends first, so
// that a leave that answers at all has taken the fan out.
func (s *Service) leavePrequeue(ctx context.Context, claims ticketrush.QueueClaims) (ticketrush.QueueStatus, uint64, error) {
	if s.onSale == nil {
		return "", 0, nil
	}
	from, err := s.onSale.store.LeavePrequeue(ctx, claims.ConcertID, claims.UserID, s.now())
	if err != nil || from != "" {
		return from, 0, err
	}
	retry := time.NewTicker(placeRetry)
	defer retry.Stop()
	for { // sealed (a pre-queue never opens again) or no entrant: only the place can come
		st, seq, err := s.onSale.store.PrequeueStatus(ctx, claims.ConcertID, claims.UserID, s.now())
		if err != nil {
			return "", 0, err
		}
		if seq > 0 {
			from, err = s.store.Leave(ctx, claims.ConcertID, claims.UserID, seq, s.now())
			return from, seq, err
		}
		if st.Status != ticketrush.StatusPrequeue {
			return "", 0, nil // no entrant (any more): nothing to give back
		}
		select {
		case <-ctx.Done():
			return "", 0, ticketrush.WithDetail(ticketrush.ErrUnavailable,
				"the draw is still placing the pre-queue's entrants: leave again in a moment")
		case <-retry.C:
		}
	}
}

// placeRetry is how often a leave between the seal and the entrant's place asks whether the place came.
const placeRetry = 50 * time.Millisecond

// Sales returns a concert's sale, nil for a concert without one (or unknown).
type Sales func(concertID string) *ticketrush.Sale

// onSale is what the service needs for concerts with a sale; nil until EnableOnSale.
type onSale struct {
	store OnSaleStore
	sales Sales
}

// EnableOnSale lets the service answer pre-queue tokens and show draw keys, over store and the
// catalog's sales. Call it before serving.
func (s *Service) EnableOnSale(store OnSaleStore, sales Sales) {
	s.onSale = &onSale{store: store, sales: sales}
}

func (s *Service) sale(concertID string) *ticketrush.Sale {
	if s.onSale == nil {
		return nil
	}
	return s.onSale.sales(concertID)
}

// askPlace asks Redis for a pre-queue token's state and the arrival seq the draw gave its entrant (0
// while they have none), and keeps a place in the view, so that this instance asks once per entrant.
func (s *Service) askPlace(ctx context.Context, claims ticketrush.QueueClaims, v *view) (ticketrush.TokenState, uint64, error) {
	if s.onSale == nil {
		return ticketrush.TokenState{}, 0, errors.New("pre-queue token without an on-sale store")
	}
	st, seq, err := s.onSale.store.PrequeueStatus(ctx, claims.ConcertID, claims.UserID, s.now())
	if err == nil && seq > 0 {
		v.placed(claims.UserID, seq)
	}
	return st, seq, err
}

// prequeueStatus answers a poll of a pre-queue token (seq 0). Once the draw placed the entrant, the
// ticket carries a fresh token of their place (both work); the place is kept in the view, so a poll with
// the old token costs a Redis round trip once per instance, not once per poll.
//
// Once the concert is sold out, the old token reads what the fresh one does: SOLD_OUT while the entrant
// is still unplaced or waiting (the line is closed), and ACTIVE, DONE or EXPIRED as they are.
func (s *Service) prequeueStatus(ctx context.Context, token string, claims ticketrush.QueueClaims, v *view) (ticketrush.Ticket, error) {
	if seq, ok := v.placeOf(claims.UserID); ok {
		if seq == 0 { // drawn without this fan: they left the pre-queue before its seal
			s.metrics.fromView.Inc()
			return s.ticket(token, claims, ticketrush.TokenState{Status: ticketrush.StatusExpired}, v), nil
		}
		placed := auth.NewClaims(claims.ConcertID, claims.UserID, seq)
		if st, pos, ok := v.lookup(seq); ok {
			if st == ticketrush.StatusWaiting {
				s.alive(claims.ConcertID, claims.UserID, seq) // a poll with the pre-queue token is a sign of life too
			}
			s.metrics.fromView.Inc()
			return s.ticket(s.tokens.Sign(placed), placed, ticketrush.TokenState{Status: st, Position: pos}, v), nil
		}
		s.metrics.fromRedis.Inc()
		st, err := s.store.TokenStatus(ctx, placed, s.now())
		if err != nil {
			return ticketrush.Ticket{}, err
		}
		if st.Status == ticketrush.StatusWaiting {
			s.alive(claims.ConcertID, claims.UserID, seq)
		}
		return s.ticket(s.tokens.Sign(placed), placed, st, v), nil
	}
	s.metrics.fromRedis.Inc()
	st, seq, err := s.askPlace(ctx, claims, v)
	if err == nil && seq == 0 && st.Status == ticketrush.StatusExpired {
		st, seq, err = s.formerPlace(ctx, claims, v, st)
	}
	if err != nil {
		return ticketrush.Ticket{}, err
	}
	if v.isSoldOut() && (st.Status == ticketrush.StatusPrequeue || st.Status == ticketrush.StatusWaiting) {
		st = ticketrush.TokenState{Status: ticketrush.StatusSoldOut} // the line is closed: nobody waiting is admitted
	}
	if seq > 0 {
		if err := s.refreshDraw(ctx, claims.ConcertID, v); err != nil { // the draw key shows as soon as it is done
			return ticketrush.Ticket{}, err
		}
		if st.Status == ticketrush.StatusWaiting { // the first poll of the old token here counts as polling too
			s.alive(claims.ConcertID, claims.UserID, seq)
		}
		placed := auth.NewClaims(claims.ConcertID, claims.UserID, seq)
		return s.ticket(s.tokens.Sign(placed), placed, st, v), nil
	}
	return s.ticket(token, claims, st, v), nil
}

// formerPlace is the state of a drawn entrant who is neither waiting nor ACTIVE any more (the pre-queue
// state reads EXPIRED): the draw gave them a place, which their key finds among the draw's keys, and the
// token of that place says whether they left, lapsed or finished (DONE), as it does for the fresh
// token. A fan who was never drawn (who left the pre-queue before the seal) stays EXPIRED, which the view
// keeps: their later polls cost no search.
func (s *Service) formerPlace(ctx context.Context, claims ticketrush.QueueClaims, v *view, expired ticketrush.TokenState) (ticketrush.TokenState, uint64, error) {
	sale := s.sale(claims.ConcertID)
	if sale == nil {
		return expired, 0, nil
	}
	if err := s.refreshDraw(ctx, claims.ConcertID, v); err != nil {
		return expired, 0, err
	}
	d, drawn := v.drawState()
	if !drawn {
		return expired, 0, nil
	}
	place, err := s.onSale.store.DrawPlaceOf(ctx, claims.ConcertID, draw.Seed(sale.Seed).KeyOf(claims.ConcertID, claims.UserID), d.Entrants)
	if err != nil {
		return expired, 0, err
	}
	if place == 0 {
		v.placed(claims.UserID, 0) // not an entrant of a complete draw, for good: the view answers next time
		return expired, 0, nil
	}
	seq := uint64(d.Base + place)
	st, err := s.store.TokenStatus(ctx, auth.NewClaims(claims.ConcertID, claims.UserID, seq), s.now())
	if err != nil {
		return expired, 0, err
	}
	v.placed(claims.UserID, seq)
	return st, seq, nil
}

// prequeuePacing is the estimated wait and poll interval of a PREQUEUE token at now: the wait counts down
// to the opening; polls spread at random over up to a minute while the opening is far, and come back
// within a few seconds after it (the draw of a large pre-queue takes seconds).
func prequeuePacing(opensAt, now time.Time) (wait, pollAfter time.Duration) {
	until := opensAt.Sub(now)
	if until < 0 {
		return 0, time.Second
	}
	secs := math.Ceil(until.Seconds())
	jitter := time.Duration(rand.IntN(3)+1) * time.Second
	if until > 2*time.Minute {
		// Far from the opening: one poll somewhere in the next 30-60 s, so a million entrants spread out.
		return time.Duration(secs) * time.Second, time.Duration(30+rand.IntN(31)) * time.Second
	}
	return time.Duration(secs) * time.Second, time.Duration(secs)*time.Second + jitter
}

// drawKey is the draw key of a token's fan once the pre-queue they joined is drawn, else "": a fan who
// joined after the opening was never drawn and has none (their key would be in no keys file). A
// pre-queue token (seq 0) stands for the place this instance learnt for its entrant.
func (s *Service) drawKey(c ticketrush.QueueClaims, v *view) string {
	sale := s.sale(c.ConcertID)
	if sale == nil {
		return ""
	}
	seq := c.Seq
	if seq == 0 {
		seq, _ = v.placeOf(c.UserID)
	}
	if !v.drawnEntrant(seq) {
		return ""
	}
	return draw.Seed(sale.Seed).KeyOf(c.ConcertID, c.UserID).Hex()
}

// refreshDraw learns whether a sale's draw is done (once it is, never asked again).
func (s *Service) refreshDraw(ctx context.Context, concertID string, v *view) error {
	if s.sale(concertID) == nil || v.isDrawn() {
		return nil
	}
	st, err := s.onSale.store.DrawState(ctx, concertID)
	if err != nil {
		return err
	}
	if st.Drawn() {
		v.setDrawn(st)
	}
	return nil
}
