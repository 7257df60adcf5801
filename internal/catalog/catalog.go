// Package catalog keeps the concert catalog: written to Postgres first, then loaded into Redis, and held
// in memory on every instance (it changes only when an admin creates a concert).
package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Record is the durable catalog in Postgres.
type Record interface {
	CreateConcert(ctx context.Context, c ticketrush.Concert) error
	Concerts(ctx context.Context) ([]ticketrush.Concert, error)
	UpdateQueueSettings(ctx context.Context, concertID string, p ticketrush.QueuePatch) (ticketrush.QueueSettings, error)
}

// Live is the catalog's copy in Redis.
type Live interface {
	LoadConcert(ctx context.Context, c ticketrush.Concert, now time.Time) (bool, error)
	Configure(ctx context.Context, concertID string, q ticketrush.QueueSettings, now time.Time) error
	Snapshot(ctx context.Context, concertID string, afterLeave uint64, limit int, now time.Time) (ticketrush.QueueSnapshot, error)
	ScheduleCounts(ctx context.Context, concertID string, scheduleIDs []string, now time.Time) ([]ticketrush.ScheduleCount, error)
}

// Service is the catalog.
type Service struct {
	record Record
	live   Live
	now    func() time.Time
	log    *slog.Logger

	mu        sync.RWMutex
	concerts  map[string]ticketrush.Concert
	order     []string
	schedules map[string]string // schedule id -> concert id
}

// NewService returns an empty catalog; Refresh fills it.
func NewService(record Record, live Live, now func() time.Time, log *slog.Logger) *Service {
	return &Service{record: record, live: live, now: now, log: log, concerts: map[string]ticketrush.Concert{}, schedules: map[string]string{}}
}

// Create validates a concert, gives it and its schedules ids, writes it to Postgres in one transaction
// and loads it into Redis.
func (s *Service) Create(ctx context.Context, c ticketrush.Concert) (ticketrush.Concert, error) {
	if err := c.Validate(); err != nil {
		return c, err
	}
	c.ID = ticketrush.NewID()
	c.Schedules = slices.Clone(c.Schedules)
	slices.SortStableFunc(c.Schedules, func(a, b ticketrush.Schedule) int { return a.StartsAt.Compare(b.StartsAt) })
	for i := range c.Schedules {
		c.Schedules[i].ID = ticketrush.NewID()
		c.Schedules[i].StartsAt = c.Schedules[i].StartsAt.UTC()
	}
	if err := s.record.CreateConcert(ctx, c); err != nil {
		return c, fmt.Errorf("create concert: %w", err)
	}
	if _, err := s.live.LoadConcert(ctx, c, s.now()); err != nil {
		// Postgres has it; the next refresh loads it into Redis.
		return c, fmt.Errorf("create concert: %w", err)
	}
	s.put(c)
	return c, nil
}

// Refresh re-reads the catalog from Postgres and loads into Redis every concert Redis lacks, so that a
// restarted or emptied Redis gets its catalog back.
func (s *Service) Refresh(ctx context.Context) error {
	all, err := s.record.Concerts(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	for _, c := range all {
		loaded, err := s.live.LoadConcert(ctx, c, now)
		if err != nil {
			return err
		}
		if loaded {
			s.log.Info("concert loaded into redis", "concert", c.ID)
		}
		s.put(c)
	}
	return nil
}

// Run refreshes every interval until ctx ends.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	periodic.Run(ctx, interval, s.Refresh, s.log, "catalog refresh")
}

func (s *Service) put(c ticketrush.Concert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.concerts[c.ID]; !ok {
		s.order = append(s.order, c.ID)
	}
	s.concerts[c.ID] = c
	for _, sc := range c.Schedules {
		s.schedules[sc.ID] = c.ID
	}
}

// ScheduleConcert returns the concert a schedule belongs to.
func (s *Service) ScheduleConcert(scheduleID string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.schedules[scheduleID]
	return id, ok
}

// List returns every concert, oldest first.
func (s *Service) List() []ticketrush.ConcertSummary {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ticketrush.ConcertSummary, 0, len(s.order))
	for _, id := range s.order {
		c := s.concerts[id]
		out = append(out, ticketrush.ConcertSummary{ID: c.ID, Title: c.Title, Venue: c.Venue})
	}
	return out
}

// IDs returns every concert id.
func (s *Service) IDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.order)
}

// Concert returns one concert.
func (s *Service) Concert(id string) (ticketrush.Concert, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.concerts[id]
	return c, ok
}

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
	return ticketrush.QueueState{
		Waiting: snap.Waiting, Active: snap.Active,
		ActiveCapacity: snap.ActiveCapacity, AdmitPerSecond: snap.AdmitPerSecond, Paused: snap.Paused,
		Seats: seats, SoldOut: snap.SoldOut, ActivePerSeat: snap.ActivePerSeat,
		Abandoned: snap.Abandoned,
	}, nil
}
