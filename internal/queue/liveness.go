package queue

import (
	"context"
	"errors"
	"time"

	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Liveness: a WAITING fan who neither polls nor holds an event stream open for abandonAfter is
// dropped at admission. A poll must still cost no Redis round trip of its own, so each instance
// gathers the arrivals it served (polls, and every open stream) in memory and writes them to Redis in
// one command per concert at most once a second (FlushLiveness); the tick reads them for the fans it is
// about to admit. A fan who polls through any instance is alive: the instances write the same hash.

// liveness is what this instance saw since its last flush.
type liveness struct {
	seen    map[string]map[uint64]string  // concert -> WAITING arrivals polled -> their user
	streams map[string]map[uint64]*stream // concert -> arrivals with open event streams
}

// stream is the open event streams of one arrival: its user (whose line shard holds the arrival's
// liveness) and how many.
type stream struct {
	user string
	n    int
}

// alive records a poll of a WAITING arrival of user.
func (s *Service) alive(concertID, user string, seq uint64) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	m := s.live.seen[concertID]
	if m == nil {
		m = map[uint64]string{}
		s.live.seen[concertID] = m
	}
	m[seq] = user
}

// streaming counts an open event stream of an arrival of user in or out (delta 1 or -1).
func (s *Service) streaming(concertID, user string, seq uint64, delta int) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	m := s.live.streams[concertID]
	if m == nil {
		m = map[uint64]*stream{}
		s.live.streams[concertID] = m
	}
	st := m[seq]
	if st == nil {
		st = &stream{user: user}
		m[seq] = st
	}
	if st.n += delta; st.n <= 0 {
		delete(m, seq)
	}
}

// FlushLiveness writes what this instance saw since the last flush: one command per concert.
func (s *Service) FlushLiveness(ctx context.Context) error {
	s.liveMu.Lock()
	batches := map[string][]ticketrush.Arrival{}
	for id, m := range s.live.seen {
		for seq, user := range m {
			batches[id] = append(batches[id], ticketrush.Arrival{UserID: user, Seq: seq})
		}
	}
	for id, m := range s.live.streams {
		if len(m) == 0 {
			continue
		}
		seqs := batches[id]
		for seq, st := range m {
			// A pre-queue token's stream (seq 0) keeps its concert awake, but has no place in line for
			// the tick to check: nothing would ever read or drop an alive field 0.
			if _, dup := s.live.seen[id][seq]; !dup && seq > 0 {
				seqs = append(seqs, ticketrush.Arrival{UserID: st.user, Seq: seq})
			}
		}
		batches[id] = seqs
	}
	s.live.seen = map[string]map[uint64]string{}
	s.liveMu.Unlock()
	for id := range batches {
		s.saw(id) // fans polling or following a stream keep their concert awake
	}
	now := s.now()
	errs := []error{s.flushActivity(ctx)}
	for id, seqs := range batches {
		if len(seqs) == 0 {
			continue
		}
		if err := s.store.MarkAlive(ctx, id, seqs, now); err != nil {
			errs = append(errs, err) // these fans are seen again at their next poll
		}
	}
	return errors.Join(errs...)
}

// RunLiveness flushes every interval (a second in production) until ctx ends.
func (s *Service) RunLiveness(ctx context.Context, interval time.Duration) {
	periodic.Run(ctx, interval, s.FlushLiveness, s.log, "queue liveness flush")
}
