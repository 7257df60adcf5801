// Package draw is the on-sale's lot: a pure function of a committed seed and the pre-queue's entrants,
// shared by the scheduler that runs the draw, the public endpoints that publish it and
// `ticketrush verify-draw` that checks it (docs/api.md, "On-sale"). Nothing here touches Redis or the clock:
// the same seed and entrants give the same places on any instance, after any crash.
package draw

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
)

// SeedSize is the seed's length in bytes.
const SeedSize = 32

// KeySize is a draw key's length in bytes; a key is written as 2*KeySize lowercase hex digits.
const KeySize = sha256.Size

// Seed is the secret a concert's draw is keyed with, fixed when the concert is created.
type Seed [SeedSize]byte

// NewSeed draws a seed from crypto/rand.
func NewSeed() (Seed, error) {
	var s Seed
	if _, err := rand.Read(s[:]); err != nil {
		return s, fmt.Errorf("draw seed: %w", err)
	}
	return s, nil
}

// ParseSeed reads a seed written as hex.
func ParseSeed(h string) (Seed, error) {
	var s Seed
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != SeedSize {
		return s, fmt.Errorf("seed must be %d bytes of hex", SeedSize)
	}
	copy(s[:], b)
	return s, nil
}

// Hex is the seed as lowercase hex.
func (s Seed) Hex() string { return hex.EncodeToString(s[:]) }

// Commitment is the public promise of the seed: the lowercase hex SHA-256 of its bytes.
func (s Seed) Commitment() string {
	sum := sha256.Sum256(s[:])
	return hex.EncodeToString(sum[:])
}

// Key is one entrant's draw key: HMAC-SHA256(key = seed, message = "<concertId>:<userId>").
type Key [KeySize]byte

// Hex is the key as lowercase hex.
func (k Key) Hex() string { return hex.EncodeToString(k[:]) }

// KeyOf returns the draw key of a user in a concert's draw.
func (s Seed) KeyOf(concertID, userID string) Key {
	m := hmac.New(sha256.New, s[:])
	m.Write([]byte(concertID))
	m.Write([]byte{':'})
	m.Write([]byte(userID))
	var k Key
	m.Sum(k[:0])
	return k
}

// Entrant is one fan of the draw and their key.
type Entrant struct {
	User string
	Key  Key
}

// Draw returns the entrants of users in draw order: ascending key, the smallest key first (place 1).
// users may come in any order and name a user more than once (a read of the pre-queue while entrants
// are placed may repeat one): each user is one entrant, and the result depends on neither.
func (s Seed) Draw(concertID string, users []string) []Entrant {
	out := make([]Entrant, len(users))
	for i, u := range users {
		out[i] = Entrant{User: u, Key: s.KeyOf(concertID, u)}
	}
	slices.SortFunc(out, func(a, b Entrant) int {
		if c := bytes.Compare(a.Key[:], b.Key[:]); c != 0 {
			return c
		}
		return strings.Compare(a.User, b.User)
	})
	// A user's repeats sort next to each other (the same user, the same key).
	return slices.CompactFunc(out, func(a, b Entrant) bool { return a.User == b.User })
}

// Digest hashes keys in the order given, each as hex followed by "\n": the entrantsDigest of docs/api.md,
// the SHA-256 of the keys file.
type Digest struct{ h hash.Hash }

// NewDigest starts a digest.
func NewDigest() *Digest { return &Digest{h: sha256.New()} }

// Add hashes one key's line.
func (d *Digest) Add(k Key) {
	var line [2*KeySize + 1]byte
	hex.Encode(line[:2*KeySize], k[:])
	line[2*KeySize] = '\n'
	d.h.Write(line[:])
}

// Hex is the digest so far as lowercase hex.
func (d *Digest) Hex() string { return hex.EncodeToString(d.h.Sum(nil)) }

// DigestOf is the digest of entrants in their order.
func DigestOf(entrants []Entrant) string {
	d := NewDigest()
	for _, e := range entrants {
		d.Add(e.Key)
	}
	return d.Hex()
}

// Published is what the public draw endpoint says of a drawn concert.
type Published struct {
	ConcertID      string
	Commitment     string
	Seed           string // hex
	Entrants       int
	EntrantsDigest string
}

// Check is one thing Verify checked, in words.
type Check struct {
	What string
	OK   bool
}

// Verification is what Verify found: every check it made, and for a user their key and place.
type Verification struct {
	Checks []Check
	Key    string // the user's key, when a user was given
	Place  int    // the user's place (1-based), 0 when not in the list
}

// OK reports whether every check passed.
func (v Verification) OK() bool {
	for _, c := range v.Checks {
		if !c.OK {
			return false
		}
	}
	return len(v.Checks) > 0
}

// Err is nil when every check passed, else an error naming the failed ones.
func (v Verification) Err() error {
	var failed []string
	for _, c := range v.Checks {
		if !c.OK {
			failed = append(failed, c.What)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return errors.New("draw verification failed: " + strings.Join(failed, "; "))
}

func (v *Verification) check(ok bool, format string, args ...any) {
	v.Checks = append(v.Checks, Check{What: fmt.Sprintf(format, args...), OK: ok})
}

// Verify checks a published draw against its keys file (one hex key a line, in draw order), as a fan
// would: the seed hashes to the commitment, the file is sorted, has Entrants lines and hashes to
// EntrantsDigest; when userID is not "", the user's key is the HMAC of the seed and is in the file, and
// Place is its line number. It reads keys once, holding no more than one line at a time.
func Verify(p Published, keys io.Reader, userID string) (Verification, error) {
	var v Verification
	seed, err := ParseSeed(p.Seed)
	if err != nil {
		v.check(false, "the published seed is %d bytes of hex", SeedSize)
		return v, nil
	}
	v.check(seed.Commitment() == p.Commitment, "SHA-256(seed) equals the commitment %s", p.Commitment)
	var mine Key
	if userID != "" {
		mine = seed.KeyOf(p.ConcertID, userID)
		v.Key = mine.Hex()
	}
	d := NewDigest()
	sc := bufio.NewScanner(keys)
	n, sorted, wellFormed := 0, true, true
	var prev Key
	for sc.Scan() {
		var k Key
		b, err := hex.DecodeString(sc.Text())
		if err != nil || len(b) != KeySize || strings.ToLower(sc.Text()) != sc.Text() {
			wellFormed = false
			continue
		}
		copy(k[:], b)
		n++
		if n > 1 && bytes.Compare(prev[:], k[:]) >= 0 {
			sorted = false
		}
		prev = k
		d.Add(k)
		if userID != "" && k == mine && v.Place == 0 {
			v.Place = n
		}
	}
	if err := sc.Err(); err != nil {
		return v, fmt.Errorf("read keys: %w", err)
	}
	v.check(wellFormed, "every line of the keys file is a lowercase hex key of %d bytes", KeySize)
	v.check(sorted, "the keys are in strictly ascending order")
	v.check(n == p.Entrants, "the keys file has %d lines (entrants %d)", n, p.Entrants)
	v.check(d.Hex() == p.EntrantsDigest, "SHA-256 of the keys file equals entrantsDigest %s", p.EntrantsDigest)
	if userID != "" {
		v.check(v.Place > 0, "user %s's key %s is in the file (place %d)", userID, v.Key, v.Place)
	}
	return v, nil
}
