package gate

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketrush/ticketrush/internal/pass"
)

// KeySet is a parsed RFC 7517 key set: the Ed25519 public keys by kid.
type KeySet map[string]ed25519.PublicKey

// MaxKeySetBytes bounds a key set's body: a set of a few keys is well under 1 KiB.
const MaxKeySetBytes = 64 << 10

// ParseKeySet reads an RFC 7517 key set. It keeps the keys with kty OKP, crv Ed25519, a 32-byte x and a
// kid, whose alg (when given) is EdDSA and use (when given) sig, and skips any other key; a set with no
// such key, or that is not a key set at all, is an error.
func ParseKeySet(body []byte) (KeySet, error) {
	var doc struct {
		Keys []pass.JWK `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON key set: %w", err)
	}
	set := KeySet{}
	for _, k := range doc.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Kid == "" || (k.Alg != "" && k.Alg != "EdDSA") || (k.Use != "" && k.Use != "sig") {
			continue
		}
		x, err := b64.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			continue
		}
		set[k.Kid] = ed25519.PublicKey(x)
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("no Ed25519 signing key among its %d keys", len(doc.Keys))
	}
	return set, nil
}

func (s KeySet) equal(o KeySet) bool {
	if len(s) != len(o) {
		return false
	}
	for kid, k := range s {
		if ok := o[kid]; ok == nil || !k.Equal(ok) {
			return false
		}
	}
	return true
}

// KeysOptions are the key cache's bounds (docs/gate.md, "The key set"); the zero value of each field
// takes the default beside it.
type KeysOptions struct {
	Client       *http.Client  // default: one whose requests end after FetchTimeout
	FetchTimeout time.Duration // 5 s: a fetch that takes longer fails
	MinRefresh   time.Duration // 30 s: the shortest period, whatever max-age says
	MaxRefresh   time.Duration // 10 min: the longest period, and the period without max-age
	Retry        time.Duration // 10 s: the period while fetches fail
	UnknownKid   time.Duration // 5 s: a pass with an unknown kid fetches at most once in this
	// Fetched, when set, is called after each fetch with its outcome: "ok", "error" (no answer, or
	// not 200) or "garbage" (not a key set).
	Fetched func(outcome string)
}

// Keys is the key set of one URL, fetched periodically and on an unknown kid. A fetch that fails or
// answers garbage leaves the last good set in place.
type Keys struct {
	url  string
	opts KeysOptions
	now  func() time.Time

	set atomic.Pointer[keyState]

	mu          sync.Mutex // one fetch at a time; guards the fields below
	lastUnknown time.Time  // when a pass of an unknown kid last fetched the set
	lastErr     error      // the last fetch's
}

type keyState struct {
	keys      KeySet
	gen       uint64
	fetchedAt time.Time
}

// NewKeys returns the key cache of url. Nothing is fetched until Fetch or Run.
func NewKeys(url string, opts KeysOptions) *Keys {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.FetchTimeout, 5*time.Second)
	def(&opts.MinRefresh, 30*time.Second)
	def(&opts.MaxRefresh, 10*time.Minute)
	def(&opts.Retry, 10*time.Second)
	def(&opts.UnknownKid, 5*time.Second)
	if opts.Client == nil {
		// No redirect is followed: one from https to http would let a path in between serve its own keys.
		opts.Client = &http.Client{Timeout: opts.FetchTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if opts.Fetched == nil {
		opts.Fetched = func(string) {}
	}
	return &Keys{url: url, opts: opts, now: time.Now}
}

// Generation counts the changes of the key set (0 before the first).
func (k *Keys) Generation() uint64 {
	if s := k.set.Load(); s != nil {
		return s.gen
	}
	return 0
}

// Snapshot returns the key set in force and when it was fetched (nil before the first good fetch).
func (k *Keys) Snapshot() (KeySet, time.Time) {
	if s := k.set.Load(); s != nil {
		return s.keys, s.fetchedAt
	}
	return nil, time.Time{}
}

// Key returns the key of kid. A kid the set does not hold fetches the set again, at most once every
// UnknownKid, and waits for that fetch (at most FetchTimeout); a kid still unknown is ErrUnknownKey, or
// ErrKeysUnavailable when the gate has no key set or the fetch failed.
func (k *Keys) Key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	if s := k.set.Load(); s != nil {
		if key := s.keys[kid]; key != nil {
			return key, nil
		}
	}
	// The fetch outlives the request that asked for it: a client that hangs up must not leave a failed
	// fetch behind, which would make every unknown kid "keys unavailable" (let through, failing open).
	fetchErr := k.fetchUnlessRecent(context.WithoutCancel(ctx), k.opts.UnknownKid)
	s := k.set.Load()
	if s != nil {
		if key := s.keys[kid]; key != nil {
			return key, nil
		}
	}
	if s == nil || fetchErr != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeysUnavailable, fetchErr)
	}
	return nil, ErrUnknownKey
}

// fetchUnlessRecent fetches for an unknown kid unless such a fetch started less than within ago; then
// it returns the last fetch's error. Callers that arrive during a fetch wait for it.
func (k *Keys) fetchUnlessRecent(ctx context.Context, within time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.lastUnknown.IsZero() && k.now().Sub(k.lastUnknown) < within {
		return k.lastErr
	}
	k.lastUnknown = k.now()
	_, err := k.fetchLocked(ctx)
	return err
}

// Fetch fetches the key set now and returns how long its answer may be kept (max-age, -1 when absent).
func (k *Keys) Fetch(ctx context.Context) (time.Duration, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetchLocked(ctx)
}

func (k *Keys) fetchLocked(ctx context.Context) (_ time.Duration, err error) {
	outcome := "error"
	defer func() {
		k.lastErr = err
		k.opts.Fetched(outcome)
	}()
	ctx, cancel := context.WithTimeout(ctx, k.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := k.opts.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("fetch the key set: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("fetch the key set: GET %s: %s", k.url, res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxKeySetBytes+1))
	if err != nil {
		return 0, fmt.Errorf("read the key set: %w", err)
	}
	outcome = "garbage"
	if len(body) > MaxKeySetBytes {
		return 0, fmt.Errorf("the key set is over %d bytes", MaxKeySetBytes)
	}
	set, err := ParseKeySet(body)
	if err != nil {
		return 0, fmt.Errorf("the key set at %s: %w", k.url, err)
	}
	outcome = "ok"
	next := &keyState{keys: set, fetchedAt: k.now(), gen: 1}
	if old := k.set.Load(); old != nil {
		next.gen = old.gen
		if !old.keys.equal(set) {
			next.gen++
		}
	}
	k.set.Store(next)
	return maxAge(res.Header.Get("Cache-Control")), nil
}

// maxAge reads max-age from a Cache-Control header; -1 when absent or not a number.
func maxAge(cc string) time.Duration {
	for _, d := range strings.Split(cc, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(d), "=")
		if ok && strings.EqualFold(name, "max-age") {
			if n, err := strconv.ParseInt(strings.Trim(v, `"`), 10, 64); err == nil && n >= 0 && n < 1<<31 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return -1
}

// period is the wait before the next fetch after one that answered max-age age (-1: none) or failed.
func (o KeysOptions) period(age time.Duration, err error) time.Duration {
	switch {
	case err != nil:
		return o.Retry
	case age < 0:
		return o.MaxRefresh
	}
	return min(max(age, o.MinRefresh), o.MaxRefresh)
}

// Refresh keeps the key set fresh until ctx ends, after a fetch (Fetch) that answered age or failed
// with err: it fetches again at each period, max-age within [MinRefresh, MaxRefresh] (MaxRefresh without
// one), or Retry after a failed fetch.
func (k *Keys) Refresh(ctx context.Context, age time.Duration, err error) {
	for {
		t := time.NewTimer(k.opts.period(age, err))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		age, err = k.Fetch(ctx)
	}
}
