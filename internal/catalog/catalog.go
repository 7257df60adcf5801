// Package catalog keeps the concert catalog: written to Postgres first, then loaded into Redis, and held
// in memory on every instance (it changes only when an admin creates a concert).
package catalog

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Record is the durable catalog in Postgres.
type Record interface {
	CreateConcert(ctx context.Context, c ticketrush.Concert) error // ErrExists when the id is taken
	Ping(ctx context.Context) error
	Concerts(ctx context.Context) ([]ticketrush.Concert, error)
	CatalogVersion(ctx context.Context) (int64, error) // moves with every change of what Concerts returns
	UpdateQueueSettings(ctx context.Context, concertID string, p ticketrush.QueuePatch) (ticketrush.QueueSettings, error)
	AddAccessCodes(ctx context.Context, concertID string, hashes []string) error
}

// Live is the catalog's copy in Redis.
type Live interface {
	LoadConcert(ctx context.Context, c ticketrush.Concert, now time.Time) (bool, error)
	Configure(ctx context.Context, concertID string, q ticketrush.QueueSettings, now time.Time) error
	Snapshot(ctx context.Context, concertID string, afterLeave uint64, limit int, now time.Time) (ticketrush.QueueSnapshot, error)
	ScheduleCounts(ctx context.Context, concertID string, scheduleIDs []string, now time.Time) ([]ticketrush.ScheduleCount, error)
	AddAccessCodes(ctx context.Context, concertID string, hashes []string) error
	PrequeueSize(ctx context.Context, concertID string) (int64, error)
	DrawState(ctx context.Context, concertID string) (ticketrush.DrawState, error)
	DefaultLineShards(ctx context.Context) (int, error)
	PlaceSeats(ctx context.Context, c ticketrush.Concert) (string, error) // where a new concert's seats go
}

// Service is the catalog.
type Service struct {
	record Record
	live   Live
	now    func() time.Time
	log    *slog.Logger

	creating sync.WaitGroup     // creates that outlived their request
	stop     context.CancelFunc // ends them (Stop)
	bg       context.Context

	changed func(ctx context.Context, concertID string) // nil: nobody listens (OnChange)

	mu        sync.RWMutex
	concerts  map[string]ticketrush.Concert
	order     []string
	sales     []string          // the concerts of order with a sale
	schedules map[string]string // schedule id -> concert id
	version   int64             // the record's CatalogVersion the last Refresh read all of (read: once it did)
	read      bool
}

// NewService returns an empty catalog; Refresh fills it.
func NewService(record Record, live Live, now func() time.Time, log *slog.Logger) *Service {
	bg, stop := context.WithCancel(context.Background())
	return &Service{record: record, live: live, now: now, log: log, concerts: map[string]ticketrush.Concert{}, schedules: map[string]string{},
		bg: bg, stop: stop}
}

// CreateBound bounds an admin create as a whole: the request answers within its own deadline, and a
// create that needs longer (ten schedules of 200,000 seats) goes on in the background up to this.
const CreateBound = 5 * time.Minute

// pingBound bounds the check that Postgres answers before a create starts.
const pingBound = 2 * time.Second

// Create validates a concert, gives it and its schedules ids, places its seats (Live.PlaceSeats), writes
// it with its placement to Postgres in one transaction and loads it into Redis. With an idempotency key
// the ids come from the key, so that a retry of the same create finds the concert the first made (and
// answers with it) instead of making a second; the same key with another concert is
// ErrIdempotencyConflict.
//
// The write runs on past ctx's deadline (up to CreateBound): when ctx ends first, Create returns the
// concert with its ids and done false, and the concert appears once the write commits; a retry with
// the key then answers with it (or, while the write still runs, done false again).
func (s *Service) Create(ctx context.Context, c ticketrush.Concert, key string) (ticketrush.Concert, bool, error) {
	if err := c.Validate(); err != nil {
		return c, false, err
	}
	if c.Queue.LineShards == 0 {
		n, err := s.live.DefaultLineShards(ctx)
		if err != nil {
			return c, false, fmt.Errorf("create concert: %w", err)
		}
		c.Queue.LineShards = n
	}
	if c.Sale != nil {
		sale := *c.Sale
		seed, err := draw.NewSeed()
		if err != nil {
			return c, false, err
		}
		sale.Seed = seed
		c.Sale = &sale
	}
	c.ID = newID(key, "concert")
	c.Schedules = slices.Clone(c.Schedules)
	slices.SortStableFunc(c.Schedules, func(a, b ticketrush.Schedule) int { return a.StartsAt.Compare(b.StartsAt) })
	for i := range c.Schedules {
		c.Schedules[i].ID = newID(key, "schedule/"+strconv.Itoa(i))
		c.Schedules[i].StartsAt = c.Schedules[i].StartsAt.UTC()
	}
	// The placement is recorded with the concert, so that restore puts its seats back where every
	// process looks for them (docs/scaleout.md, "Placement").
	slots, err := s.live.PlaceSeats(ctx, c)
	if err != nil {
		return c, false, fmt.Errorf("create concert: %w", err)
	}
	c.Placement = ticketrush.Placement{Slots: slots, Recorded: true}
	// The write outlives the request; whether Postgres answers at all is known now (a 503, not a 202).
	pctx, cancel := context.WithTimeout(ctx, pingBound)
	err = s.record.Ping(pctx)
	cancel()
	if err != nil {
		return c, false, fmt.Errorf("create concert: postgres: %w", errors.Join(ticketrush.ErrUnavailable, err))
	}
	type result struct {
		c   ticketrush.Concert
		err error
	}
	done := make(chan result, 1)
	s.creating.Add(1)
	go func() {
		defer s.creating.Done()
		wctx, cancel := context.WithTimeout(s.bg, CreateBound)
		defer cancel()
		got, err := s.create(wctx, c)
		if err != nil && ctx.Err() != nil {
			s.log.Error("background concert create failed", "concert", c.ID, "err", err)
		}
		done <- result{got, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err == nil, r.err
	case <-ctx.Done():
		return c, false, nil
	}
}

// Stop ends the creates still running in the background (their transactions roll back) and waits for
// them.
func (s *Service) Stop() {
	s.stop()
	s.creating.Wait()
}

func (s *Service) create(ctx context.Context, c ticketrush.Concert) (ticketrush.Concert, error) {
	err := s.record.CreateConcert(ctx, c)
	if errors.Is(err, ticketrush.ErrExists) {
		return s.existing(ctx, c)
	}
	if err != nil {
		return c, fmt.Errorf("create concert: %w", err)
	}
	if _, err := s.live.LoadConcert(ctx, c, s.now()); err != nil {
		// Postgres has it; the next refresh loads it into Redis.
		return c, fmt.Errorf("create concert: %w", err)
	}
	s.put(c)
	s.change(ctx, c.ID)
	return c, nil
}

// existing answers a retried create with the concert the first one made, if it is the same concert.
func (s *Service) existing(ctx context.Context, c ticketrush.Concert) (ticketrush.Concert, error) {
	prior, ok := s.Concert(c.ID)
	if !ok {
		if err := s.Refresh(ctx); err != nil {
			return c, fmt.Errorf("create concert: read the existing one: %w", err)
		}
		if prior, ok = s.Concert(c.ID); !ok {
			return c, fmt.Errorf("create concert %s: exists but cannot be read: %w", c.ID, ticketrush.ErrUnavailable)
		}
	}
	if !sameConcert(prior, c) {
		return c, ticketrush.ErrIdempotencyConflict
	}
	return prior, nil
}

// sameConcert reports whether a and b are the same create (ids aside).
func sameConcert(a, b ticketrush.Concert) bool {
	if a.Title != b.Title || a.Venue != b.Venue || a.Queue != b.Queue || !slices.Equal(a.Sections, b.Sections) ||
		len(a.Schedules) != len(b.Schedules) {
		return false
	}
	for i := range a.Schedules {
		if !a.Schedules[i].StartsAt.Equal(b.Schedules[i].StartsAt) {
			return false
		}
	}
	if (a.Sale == nil) != (b.Sale == nil) {
		return false
	}
	// The seeds differ (each create draws one); the first create's stands.
	return a.Sale == nil || a.Sale.OpensAt.Equal(b.Sale.OpensAt) && a.Sale.PrequeueOpensAt.Equal(b.Sale.PrequeueOpensAt) &&
		a.Sale.ClosesAt.Equal(b.Sale.ClosesAt)
}

// newID is a fresh id, or without randomness the id of what under key: the same key, the same ids.
func newID(key, what string) string {
	if key == "" {
		return ticketrush.NewID()
	}
	sum := sha256.Sum256([]byte("admin create\x00" + key + "\x00" + what))
	b := make([]byte, 12)
	for i := range b {
		b[i] = idAlphabet[int(sum[i])%len(idAlphabet)]
	}
	return string(b)
}

const idAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// Refresh re-reads the catalog from Postgres and loads into Redis every concert this instance has not
// seen in Redis yet (one script call each, the first time only: an idle catalog costs no Redis command
// per refresh). A Redis emptied later is `ticketrush restore`'s to fill: readiness reports it.
func (s *Service) Refresh(ctx context.Context) error {
	v, err := s.record.CatalogVersion(ctx)
	if err != nil {
		return err
	}
	s.mu.RLock()
	same := s.read && v == s.version
	s.mu.RUnlock()
	if same {
		return nil // nothing changed since the last read of it all
	}
	all, err := s.record.Concerts(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	for _, c := range all {
		// A concert this instance knows was made sure of in Redis when it first learnt of it (here,
		// or by its create); LoadConcert changes nothing for a concert Redis holds.
		if _, known := s.Concert(c.ID); !known {
			loaded, err := s.live.LoadConcert(ctx, c, now)
			if err != nil {
				return err
			}
			if loaded {
				s.log.Info("concert loaded into redis", "concert", c.ID)
			}
		}
		s.put(c)
	}
	s.mu.Lock()
	s.version, s.read = v, true // read before the concerts: a change meanwhile is read again next time
	s.mu.Unlock()
	return nil
}

// OnChange makes every create, queue-settings change and access-code issue of a concert call changed
// (queue.Activity.Touch: the concert's loops and stream reads run for a while, and the write-behind
// records the change's event). Call it before serving.
func (s *Service) OnChange(changed func(ctx context.Context, concertID string)) { s.changed = changed }

func (s *Service) change(ctx context.Context, concertID string) {
	if s.changed != nil {
		s.changed(ctx, concertID)
	}
}

// Closed reports whether a concert's sale has closed at now (sale.closesAt); an unknown concert or one
// without a sale is not closed.
func (s *Service) Closed(concertID string, now time.Time) bool {
	sale := s.Sale(concertID)
	return sale != nil && sale.ClosedAt(now)
}

func (s *Service) put(c ticketrush.Concert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.concerts[c.ID]; !ok {
		s.order = append(s.order, c.ID)
		if c.Sale != nil {
			s.sales = append(s.sales, c.ID)
		}
	}
	s.concerts[c.ID] = c
	for _, sc := range c.Schedules {
		s.schedules[sc.ID] = c.ID
	}
}

// Placement returns a concert's placement as the record had it at the last refresh that read the
// catalog (not recorded for a concert the catalog does not hold): the layout every process follows
// (redis.Store.FollowPlacements).
func (s *Service) Placement(concertID string) ticketrush.Placement {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.concerts[concertID].Placement
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
