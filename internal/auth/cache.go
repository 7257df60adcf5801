package auth

import "sync"

// cache keeps what a verified token proved, keyed by the whole token: a fan presents the same JWT and
// the same queue token on every poll and every gated call, and verifying either again is most of what
// such a call costs the service otherwise. Only tokens that verified are put in, so a hit proves what a
// verification would; a token's own expiry, where it has one, is its caller's to check on each hit.
// Bounded: a shard that fills is started afresh, and a token dropped so is verified again.
type cache[V any] struct {
	perShard int
	shards   [cacheShards]cacheShard[V]
}

const (
	cacheShards   = 32
	cachePerShard = 4096 // 131,072 tokens in all
)

type cacheShard[V any] struct {
	mu      sync.Mutex
	entries map[string]V
}

func newCache[V any]() *cache[V] { return &cache[V]{perShard: cachePerShard} }

func (c *cache[V]) shard(token string) *cacheShard[V] {
	return &c.shards[fnv32(tail(token))%cacheShards]
}

func (c *cache[V]) get(token string) (V, bool) {
	s := c.shard(token)
	s.mu.Lock()
	v, ok := s.entries[token]
	s.mu.Unlock()
	return v, ok
}

func (c *cache[V]) put(token string, v V) {
	s := c.shard(token)
	s.mu.Lock()
	if len(s.entries) >= c.perShard || s.entries == nil {
		s.entries = make(map[string]V, c.perShard) // full: start the shard afresh
	}
	s.entries[token] = v
	s.mu.Unlock()
}

// tail is what picks a token's cache shard: its last 16 bytes, of the HMAC signature in a JWT and in a
// queue token, as random as the whole (only tokens that verified are kept, so nobody can crowd one
// shard without the secret) and a fraction of the bytes to hash on every request.
func tail(token string) string { return token[max(0, len(token)-16):] }

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}
