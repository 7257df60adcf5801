package http

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Limiter is the per-instance request limit of docs/api.md's Abuse section: a token bucket per key (a user
// id, or a client address on public endpoints), refilled at rate a second up to burst. Reads are limited
// here alone, so a poll costs no Redis round trip; the state-changing calls are limited again in Redis,
// across instances, by the scripts they run (internal/redis UserLimit), with the same algorithm (GCRA:
// a bucket is the time its next request is due, in integer nanoseconds here, so the counts are exact).
// Memory is bounded: a shard that grows past its share forgets the buckets that have refilled, and at
// worst starts afresh.
type Limiter struct {
	gap, tolerance time.Duration // 1/rate, and (burst-1)/rate
	now            func() time.Time
	perShard       int
	shards         [limiterShards]limiterShard
}

const (
	limiterShards   = 64
	limiterPerShard = 16384 // about a million keys in all
)

type limiterShard struct {
	mu      sync.Mutex
	buckets map[string]time.Time // key -> theoretical arrival time of its next request
}

// NewLimiter returns a limiter of rate requests a second with bursts of burst; nil when rate is 0 (off).
func NewLimiter(rate, burst int, now func() time.Time) *Limiter {
	if rate <= 0 {
		return nil
	}
	gap := time.Second / time.Duration(rate)
	return &Limiter{gap: gap, tolerance: gap * time.Duration(max(burst, 1)-1), now: now, perShard: limiterPerShard}
}

// Allow takes a token of key's bucket. When there is none it reports how long until there is one.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	now := l.now()
	sh := &l.shards[fnv32(key)%limiterShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tat, ok := sh.buckets[key]
	if !ok && (len(sh.buckets) >= l.perShard || sh.buckets == nil) {
		l.forget(sh, now)
	}
	if tat.Before(now) {
		tat = now
	}
	if ahead := tat.Sub(now); ahead > l.tolerance {
		return false, ahead - l.tolerance
	}
	sh.buckets[key] = tat.Add(l.gap)
	return true, 0
}

// forget drops the buckets that are full again (they would start full anyway); if that frees nothing,
// the shard starts afresh.
func (l *Limiter) forget(sh *limiterShard, now time.Time) {
	if sh.buckets == nil {
		sh.buckets = make(map[string]time.Time)
		return
	}
	for k, tat := range sh.buckets {
		if !tat.After(now) {
			delete(sh.buckets, k)
		}
	}
	if len(sh.buckets) >= l.perShard {
		sh.buckets = make(map[string]time.Time)
	}
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// retryAfter is a wait in whole seconds, at least 1, as Retry-After wants it.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// limited guards a /v1 handler with the per-instance limit (docs/api.md: "every /v1 endpoint limits each
// user, the public ones each client address"): a public endpoint by client address; any other by the
// caller's user. A request to one of those whose bearer JWT does not verify is not counted: its answer
// is 401 UNAUTHENTICATED, as the contract has it, which costs no more than a 429 would. A limited
// request does nothing and answers 429 RATE_LIMITED with Retry-After.
func (s *Server) limited(h handlerFunc, public bool) handlerFunc {
	if s.Limiter == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		var key string
		if public {
			key = "a:" + clientAddr(r, s.TrustedProxies)
		} else if user, err := s.user(r); err == nil {
			key = "u:" + user
		} else {
			return h(w, r, p) // refused by the handler's own check of the JWT
		}
		if ok, wait := s.Limiter.Allow(key); !ok {
			w.Header().Set("Retry-After", retryAfter(wait))
			return ticketrush.ErrRateLimited
		}
		return h(w, r, p)
	}
}

// clientAddr is the request's client address: the connection's, unless the connection comes from a
// trusted proxy (TRUSTED_PROXY_CIDRS); then the last hop of X-Forwarded-For that is not a trusted
// proxy (hops further left are whatever the client wrote).
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	remote, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	remote = remote.Unmap()
	if !isTrusted(remote, trusted) {
		return remote.String()
	}
	client := remote
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return client.String() // a hop that is no address: trust nothing left of it
			}
			client = a.Unmap()
			if !isTrusted(client, trusted) {
				return client.String()
			}
		}
	}
	return client.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
