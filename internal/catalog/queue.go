package catalog

import (
	"context"
	"fmt"
	"slices"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// A concert's line and sale as the console changes and reads them: the queue settings, the live state,
// the sale, the access codes.

// PatchQueue changes a concert's admission settings: Postgres first, then Redis, where every
// scheduler's next tick reads them.
func (s *Service) PatchQueue(ctx context.Context, concertID string, p ticketrush.QueuePatch) (ticketrush.QueueSettings, error) {
	c, ok := s.Concert(concertID)
	if !ok {
		return ticketrush.QueueSettings{}, ticketrush.ErrNotFound
	}
	if err := p.Apply(c.Queue).Validate(); err != nil {
		return ticketrush.QueueSettings{}, err
	}
	q, err := s.record.UpdateQueueSettings(ctx, concertID, p)
	if err != nil {
		return q, err
	}
	if err := s.live.Configure(ctx, concertID, q, s.now()); err != nil {
		return q, err
	}
	c.Queue = q
	s.put(c)
	s.change(ctx, concertID)
	return q, nil
}

// QueueState returns a concert's live waiting-room figures and settings.
func (s *Service) QueueState(ctx context.Context, concertID string) (ticketrush.QueueState, error) {
	c, ok := s.Concert(concertID)
	if !ok {
		return ticketrush.QueueState{}, ticketrush.ErrNotFound
	}
	snap, err := s.live.Snapshot(ctx, concertID, 0, 0, s.now())
	if err != nil {
		return ticketrush.QueueState{}, err
	}
	if !snap.Found {
		return ticketrush.QueueState{}, fmt.Errorf("concert %s is not loaded in redis: %w", concertID, ticketrush.ErrUnavailable)
	}
	counts, err := s.live.ScheduleCounts(ctx, concertID, c.ScheduleIDs(), s.now())
	if err != nil {
		return ticketrush.QueueState{}, err
	}
	seats := ticketrush.SeatCounts{Available: int64(c.TotalSeats() * len(c.Schedules))}
	for _, n := range counts {
		seats.Available -= n.Taken
		seats.Held += n.Taken - n.Sold
		seats.Sold += n.Sold
	}
	// The settings the line's scripts read (capacity, rate, pause, activePerSeat, abandonment) as Redis
	// has them; the others as this instance's catalog has them, which follows a PATCH made through
	// another instance within the catalog's refresh (CatalogRefresh, 0.5 s).
	settings := c.Queue
	settings.ActiveCapacity, settings.AdmitPerSecond, settings.Paused = snap.ActiveCapacity, snap.AdmitPerSecond, snap.Paused
	settings.ActivePerSeat, settings.AbandonAfter = snap.ActivePerSeat, snap.AbandonAfter
	st := ticketrush.QueueState{Waiting: snap.Waiting, Active: snap.Active, Admitted: snap.Admitted, Settings: settings,
		Seats: seats, SoldOut: snap.SoldOut, Abandoned: snap.Abandoned}
	if sale := c.Sale; sale != nil {
		if s.now().Before(sale.OpensAt) {
			st.OpensAt = sale.OpensAt
		}
		d, err := s.live.DrawState(ctx, concertID)
		if err != nil {
			return ticketrush.QueueState{}, err
		}
		if !d.Drawn() {
			if st.Prequeue, err = s.live.PrequeueSize(ctx, concertID); err != nil {
				return ticketrush.QueueState{}, err
			}
		}
	}
	return st, nil
}

// Sale returns a concert's sale, nil for a concert without one or unknown (queue.Sales).
func (s *Service) Sale(concertID string) *ticketrush.Sale {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.concerts[concertID].Sale
}

// SaleIDs returns the concerts with a sale, oldest first: the drawer's concerts.
func (s *Service) SaleIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.sales)
}

// IssueAccessCodes makes count new presale codes for a concert: recorded (by hash) in Postgres first,
// then in Redis where the join script checks them. Only the caller ever sees the codes themselves.
func (s *Service) IssueAccessCodes(ctx context.Context, concertID string, count int) ([]string, error) {
	if count < 1 || count > ticketrush.MaxAccessCodes {
		return nil, ticketrush.Invalidf("count must be between 1 and %d", ticketrush.MaxAccessCodes)
	}
	if _, ok := s.Concert(concertID); !ok {
		return nil, ticketrush.ErrNotFound
	}
	codes, hashes := make([]string, count), make([]string, count)
	for i := range codes {
		codes[i] = ticketrush.NewAccessCode()
		hashes[i] = ticketrush.HashAccessCode(codes[i])
	}
	if err := s.record.AddAccessCodes(ctx, concertID, hashes); err != nil {
		return nil, err
	}
	if err := s.live.AddAccessCodes(ctx, concertID, hashes); err != nil {
		return nil, err
	}
	s.change(ctx, concertID)
	return codes, nil
}
