package queue

import (
	"context"
	"errors"
	"time"

	"github.com/ticketrush/ticketrush/internal/periodic"
)

// Liveness: a WAITING fan who neither polls nor holds an event stream open for abandonAfter is
// dropped at admission. A poll must still cost no Redis round trip of its own, so each instance
// gathers the arrivals it served (polls, and every open stream) in memory and writes them to Redis in
// one command per concert at most once a second (FlushLiveness); the tick reads them for the fans it is
// about to admit. A fan who polls through any instance is alive: the instances write the same hash.

// liveness is what this instance saw since its last flush.
type liveness struct {
	seen    map[string]map[uint64]struct{} // concert -> WAITING arrivals polled
	streams map[string]map[uint64]int      // concert -> arrivals with open event streams (a count each)
}

// alive records a poll of a WAITING arrival.
func (s *Service) alive(concertID string, seq uint64) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	m := s.live.seen[concertID]
	if m == nil {
		m = map[uint64]struct{}{}
		s.live.seen[concertID] = m
	}
	m[seq] = struct{}{}
}

// streaming counts an open event stream of an arrival in or out (delta 1 or -1).
func (s *Service) streaming(concertID string, seq uint64, delta int) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	m := s.live.streams[concertID]
	if m == nil {
		m = map[uint64]int{}
		s.live.streams[concertID] = m
	}
	if m[seq] += delta; m[seq] <= 0 {
		delete(m, seq)
	}
}

// FlushLiveness writes what this instance saw since the last flush: one command per concert.
func (s *Service) FlushLiveness(ctx context.Context) error {
	s.liveMu.Lock()
	batches := map[string][]uint64{}
	for id, m := range s.live.seen {
		for seq := range m {
			batches[id] = append(batches[id], seq)
		}
	}
	for id, m := range s.live.streams {
		if len(m) == 0 {
			continue
		}
		seqs := batches[id]
		for seq := range m {
			// A pre-queue token's stream (seq 0) keeps its concert awake, but has no place in line for
			// the tick to check: nothing would ever read or drop an alive field 0.
			if _, dup := s.live.seen[id][seq]; !dup && seq > 0 {
				seqs = append(seqs, seq)
			}
		}
		batches[id] = seqs
	}
	s.live.seen = map[string]map[uint64]struct{}{}
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
