// Package queue is the waiting room: joins, polls, leaves, the admission check of gated calls, and the
// scheduler that admits the head of each concert's line. State lives in Redis behind Store; polls of
// WAITING tokens are answered from per-concert views that every instance refreshes a few times a second.
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Store is the queue state in Redis.
type Store interface {
	Join(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.JoinResult, error)
	JoinWith(ctx context.Context, concertID, userID string, pass ticketrush.JoinPass, now time.Time) (ticketrush.JoinResult, error)
	Leave(ctx context.Context, concertID, userID string, seq uint64, now time.Time) (ticketrush.QueueStatus, error)
	TokenStatus(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error)
	Snapshot(ctx context.Context, concertID string, afterLeave uint64, limit int, now time.Time) (ticketrush.QueueSnapshot, error)
	MarkAlive(ctx context.Context, concertID string, seen []ticketrush.Arrival, now time.Time) error
}

// Tokens signs and verifies queue tokens.
type Tokens interface {
	Sign(ticketrush.QueueClaims) string
	Verify(string) (ticketrush.QueueClaims, error)
}

// leavesPerSnapshot bounds one snapshot reply; a refresh asks again while replies come back full.
const leavesPerSnapshot = 5000

// Service is the waiting room of every concert.
type Service struct {
	store   Store
	tokens  Tokens
	now     func() time.Time
	log     *slog.Logger
	metrics *metrics

	mu      sync.RWMutex
	views   map[string]*view
	loading map[string]*viewLoad // a concert's first snapshot being read: one read, every caller waits for it

	onSale   *onSale   // nil: no concert has a sale (EnableOnSale)
	activity *Activity // nil: concerts are not woken (TrackActivity)
	liveMu   sync.Mutex
	live     liveness

	leftMu sync.Mutex
	onLeft []func(concertID, userID string) // told of every leave through this service (OnLeave)

	news          tokenNews     // wakes the event streams of a fan whose ACTIVE token changed here
	activeRecheck time.Duration // how often an ACTIVE token's stream asks Redis (activeRecheck)
}

// OnLeave makes every leave through this service (DELETE /v1/queue on this instance) call left with the
// fan's concert and user once it is done: the booking service forgets what it proved of their token.
func (s *Service) OnLeave(left func(concertID, userID string)) {
	s.leftMu.Lock()
	defer s.leftMu.Unlock()
	s.onLeft = append(s.onLeft, left)
}

// NewService returns the waiting room over store.
func NewService(store Store, tokens Tokens, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *Service {
	return &Service{store: store, tokens: tokens, now: now, log: log, metrics: newMetrics(reg), views: map[string]*view{}, loading: map[string]*viewLoad{},
		activeRecheck: activeRecheck,
		live:          liveness{seen: map[string]map[uint64]string{}, streams: map[string]map[uint64]*stream{}}}
}

// Join puts the user in the concert's line, or returns their live token; created tells which.
func (s *Service) Join(ctx context.Context, userID, concertID string) (ticketrush.Ticket, bool, error) {
	return s.JoinWith(ctx, userID, concertID, ticketrush.JoinPass{})
}

// JoinWith is Join carrying a pass for the concert's gates (proof of work, access code), which the
// join script checks.
func (s *Service) JoinWith(ctx context.Context, userID, concertID string, pass ticketrush.JoinPass) (ticketrush.Ticket, bool, error) {
	if sale := s.sale(concertID); sale != nil && sale.ClosedAt(s.now()) {
		return ticketrush.Ticket{}, false, ticketrush.ErrSaleClosed
	}
	r, err := s.store.JoinWith(ctx, concertID, userID, pass, s.now())
	if err != nil {
		return ticketrush.Ticket{}, false, err
	}
	s.wake(ctx, concertID)
	if r.Created {
		s.metrics.joined.WithLabelValues(concertID).Inc()
		if r.Status == ticketrush.StatusActive {
			s.metrics.admitted.WithLabelValues(concertID).Inc()
		}
	}
	claims := auth.NewClaims(concertID, userID, r.Seq)
	v, err := s.view(ctx, concertID)
	if err != nil {
		return ticketrush.Ticket{}, false, err
	}
	v.arrived(r)
	if r.Skipped > 0 {
		v.leftLine(r.Skipped) // the seq a sharded line's rejoin took and gave back: nobody waits there
	}
	state := ticketrush.TokenState{Status: r.Status, ActiveUntil: r.ActiveUntil}
	if r.Status == ticketrush.StatusWaiting {
		if _, pos, ok := v.lookup(r.Seq); ok {
			state.Position = pos
		} else if state, err = s.store.TokenStatus(ctx, claims, s.now()); err != nil {
			return ticketrush.Ticket{}, false, err
		}
	}
	return s.ticket(s.tokens.Sign(claims), claims, state, v), r.Created, nil
}

// Status returns the state of the user's token, whatever it is. It costs no Redis round trip for a
// WAITING token the view can place.
func (s *Service) Status(ctx context.Context, userID, token string) (ticketrush.Ticket, error) {
	claims, err := s.claims(userID, token)
	if err != nil {
		return ticketrush.Ticket{}, err
	}
	v, err := s.view(ctx, claims.ConcertID)
	if err != nil {
		return ticketrush.Ticket{}, err
	}
	s.saw(claims.ConcertID)
	if claims.Seq == 0 {
		return s.prequeueStatus(ctx, token, claims, v)
	}
	if st, pos, ok := v.lookup(claims.Seq); ok {
		s.metrics.fromView.Inc()
		if st == ticketrush.StatusWaiting {
			s.alive(claims.ConcertID, claims.UserID, claims.Seq)
		}
		return s.ticket(token, claims, ticketrush.TokenState{Status: st, Position: pos}, v), nil
	}
	s.metrics.fromRedis.Inc()
	state, err := s.store.TokenStatus(ctx, claims, s.now())
	if err != nil {
		return ticketrush.Ticket{}, err
	}
	if state.Status == ticketrush.StatusWaiting {
		s.alive(claims.ConcertID, claims.UserID, claims.Seq)
	}
	return s.ticket(token, claims, state, v), nil
}

// Leave takes the user's token out of the line or gives back its active slot. Leaving a token that is
// no longer live does nothing.
func (s *Service) Leave(ctx context.Context, userID, token string) error {
	claims, err := s.claims(userID, token)
	if err != nil {
		return err
	}
	s.saw(claims.ConcertID)
	var from ticketrush.QueueStatus
	if claims.Seq == 0 {
		from, claims.Seq, err = s.leavePrequeue(ctx, claims)
	} else {
		from, err = s.store.Leave(ctx, claims.ConcertID, userID, claims.Seq, s.now())
	}
	if err != nil {
		return err
	}
	if from == ticketrush.StatusWaiting {
		if v, err := s.view(ctx, claims.ConcertID); err == nil {
			v.leftLine(claims.Seq)
		}
	}
	if from != "" {
		s.metrics.left.WithLabelValues(claims.ConcertID, string(from)).Inc()
	}
	s.leftMu.Lock()
	hooks := s.onLeft
	s.leftMu.Unlock()
	for _, left := range hooks {
		left(claims.ConcertID, userID)
	}
	s.news.tell(claims.ConcertID, userID)
	return nil
}

// TokenChanged tells the fan's event streams on this instance that their token may have changed (the
// booking service calls it when a payment completes: the last paid hold makes the token DONE).
func (s *Service) TokenChanged(concertID, userID string) { s.news.tell(concertID, userID) }

// The refusals of a genuine-looking request with the wrong queue token, each saying what is wrong.
var (
	errNoQueueToken = ticketrush.WithDetail(ticketrush.ErrQueueTokenInvalid,
		"the X-Queue-Token header is missing; send the token that joining the concert's line (POST /v1/concerts/{id}/queue) returned")
	errOtherUser    = ticketrush.WithDetail(ticketrush.ErrQueueTokenInvalid, "the queue token belongs to another user")
	errOtherConcert = ticketrush.WithDetail(ticketrush.ErrQueueTokenInvalid,
		"the queue token is for another concert; join this concert's line for a token of its own")
)

// Verify verifies a gated call's token: genuine, the user's, and for concertID when it is given. A
// pre-queue token (seq 0) keeps working after the draw (docs/api.md, "On-sale": both tokens work): it
// stands for the place the draw gave its entrant, learnt from this instance's view, or else from Redis
// (once per instance and entrant once placed; on every gated call before the draw or after a leave, a
// round trip beside the call's own); before the draw it is not active yet. Any other token costs no
// Redis call here.
func (s *Service) Verify(ctx context.Context, userID, concertID, token string) (ticketrush.QueueClaims, error) {
	claims, err := s.claims(userID, token)
	if err != nil {
		return claims, err
	}
	if concertID != "" && claims.ConcertID != concertID {
		return claims, errOtherConcert
	}
	if claims.Seq == 0 {
		return s.placedClaims(ctx, claims)
	}
	return claims, nil
}

// placedClaims returns the claims of the place the draw gave a pre-queue token's entrant, or the gate's
// refusal while they have none (PREQUEUE: not active yet; left or dropped: expired).
func (s *Service) placedClaims(ctx context.Context, claims ticketrush.QueueClaims) (ticketrush.QueueClaims, error) {
	v, err := s.view(ctx, claims.ConcertID)
	if err != nil {
		return claims, err
	}
	seq, ok := v.placeOf(claims.UserID)
	if ok && seq == 0 {
		return claims, ticketrush.ErrQueueTokenExpired // drawn without this fan (formerPlace)
	}
	if !ok {
		var st ticketrush.TokenState
		if st, seq, err = s.askPlace(ctx, claims, v); err != nil {
			return claims, err
		}
		if seq == 0 {
			if err := st.Status.GateError(); err != nil {
				return claims, err
			}
			return claims, ticketrush.ErrQueueTokenExpired // no place, so no active one
		}
	}
	return auth.NewClaims(claims.ConcertID, claims.UserID, seq), nil
}

func (s *Service) claims(userID, token string) (ticketrush.QueueClaims, error) {
	if token == "" {
		return ticketrush.QueueClaims{}, errNoQueueToken
	}
	c, err := s.tokens.Verify(token)
	if err != nil {
		return c, err
	}
	if c.UserID != userID {
		return c, errOtherUser
	}
	return c, nil
}

func (s *Service) ticket(token string, c ticketrush.QueueClaims, st ticketrush.TokenState, v *view) ticketrush.Ticket {
	t := ticketrush.Ticket{Token: token, ConcertID: c.ConcertID, Status: st.Status}
	var abandon time.Duration
	t.Paused, t.SeatsAvailable, abandon = v.pollInfo()
	switch st.Status {
	case ticketrush.StatusWaiting:
		t.Position = st.Position
		// Paused, nobody is admitted: the estimate is then the wait once admission resumes (paused says
		// so); the poll cadence stays.
		t.EstimatedWait, t.PollAfter = pacing(st.Position, v.rate())
		if abandon > 0 {
			// A fan who polls as told is never dropped for silence: at least three polls per window.
			t.PollAfter = min(t.PollAfter, max(time.Second, (abandon/3).Truncate(time.Second)))
		}
	case ticketrush.StatusActive:
		t.ActiveUntil = st.ActiveUntil
		t.PollAfter = 30 * time.Second
	case ticketrush.StatusPrequeue:
		if sale := s.sale(c.ConcertID); sale != nil {
			now := s.now()
			if now.Before(sale.OpensAt) {
				t.OpensAt = sale.OpensAt
			}
			t.EstimatedWait, t.PollAfter = prequeuePacing(sale.OpensAt, now)
		}
	}
	t.DrawKey = s.drawKey(c, v)
	return t
}

// view returns the concert's view, reading a first snapshot when this instance has none yet.
func (s *Service) view(ctx context.Context, concertID string) (*view, error) {
	s.mu.RLock()
	v := s.views[concertID]
	s.mu.RUnlock()
	if v != nil {
		v.use(s.now())
		return v, nil
	}
	s.mu.Lock()
	if v = s.views[concertID]; v != nil {
		s.mu.Unlock()
		v.use(s.now())
		return v, nil
	}
	l, reading := s.loading[concertID]
	if !reading {
		l = &viewLoad{done: make(chan struct{})}
		s.loading[concertID] = l
	}
	s.mu.Unlock()
	if !reading {
		// The read runs apart from the request that started it, so that its deadline does not fail the
		// others waiting for it; each of them waits only as long as its own context allows.
		go s.loadView(context.WithoutCancel(ctx), concertID, l)
	}
	select {
	case <-l.done:
		return l.v, l.err
	case <-ctx.Done():
		return nil, fmt.Errorf("queue view %s: %w", concertID, ctx.Err())
	}
}

// viewLoad is the first snapshot read of a concert's view, shared by every call that needs it meanwhile:
// when the first fans of a sale arrive at once at an instance, each of them would otherwise read a
// snapshot of its own.
type viewLoad struct {
	done chan struct{}
	v    *view
	err  error
}

// loadView reads a concert's first snapshot for every caller waiting on l, and keeps the view on
// success; after a failure the next call reads again.
func (s *Service) loadView(ctx context.Context, concertID string, l *viewLoad) {
	ctx, cancel := context.WithTimeout(ctx, viewLoadTimeout)
	defer cancel()
	v := &view{}
	v.use(s.now())
	err := s.refreshView(ctx, concertID, v)
	s.mu.Lock()
	delete(s.loading, concertID)
	if err == nil {
		s.views[concertID] = v
	}
	s.mu.Unlock()
	if l.err = err; err == nil {
		l.v = v
	}
	close(l.done)
}

// viewLoadTimeout bounds a first snapshot read, which runs apart from any request.
const viewLoadTimeout = 10 * time.Second

// viewIdle is how long a view nobody reads is kept (and refreshed); the next read after it reads a
// fresh snapshot, as the first read of a concert does.
const viewIdle = 10 * time.Second

// Refresh re-reads the snapshot of every concert this instance has a view of that someone read in the
// last viewIdle or follows on an event stream; it drops the others.
func (s *Service) Refresh(ctx context.Context) error {
	now := s.now()
	s.liveMu.Lock()
	streamed := map[string]bool{}
	for id, m := range s.live.streams {
		streamed[id] = len(m) > 0
	}
	s.liveMu.Unlock()
	s.mu.Lock()
	ids := make([]string, 0, len(s.views))
	views := make([]*view, 0, len(s.views))
	for id, v := range s.views {
		if !streamed[id] && now.Sub(v.lastUse()) > viewIdle {
			delete(s.views, id)
			continue
		}
		ids = append(ids, id)
		views = append(views, v)
	}
	s.mu.Unlock()
	var errs []error
	for i, id := range ids {
		if err := s.refreshView(ctx, id, views[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Service) refreshView(ctx context.Context, concertID string, v *view) error {
	for {
		v.mu.RLock()
		after := v.lastLeave
		v.mu.RUnlock()
		now := s.now()
		snap, err := s.store.Snapshot(ctx, concertID, after, leavesPerSnapshot, now)
		if err != nil {
			return err
		}
		v.apply(snap, now)
		s.metrics.observe(concertID, snap, v)
		if len(snap.Leaves) < leavesPerSnapshot {
			return s.refreshDraw(ctx, concertID, v)
		}
	}
}

// RunRefresher refreshes the views every interval until ctx ends.
func (s *Service) RunRefresher(ctx context.Context, interval time.Duration) {
	periodic.Run(ctx, interval, s.Refresh, s.log, "queue view refresh")
}
