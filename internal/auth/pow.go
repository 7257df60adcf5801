package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Challenges issues and checks the proof-of-work challenges of docs/api.md's Abuse section without Redis:
// a challenge is base64url(payload) "." base64url(HMAC-SHA256) where payload = version(1) | expires
// (8, Unix ms) | bits(1) | id(16, random) | len+concert | user, so it is bound to the user and concert,
// and says its own difficulty and expiry. Single use is the join script's (it keeps the ids it has
// seen until they expire, in the concert's slot).
type Challenges struct {
	key []byte
}

// ChallengeTTL is how long a challenge works.
const ChallengeTTL = 2 * time.Minute

const challengeVersion = 1

// NewChallenges returns a signer keyed from secret (the queue token secret: every instance shares it),
// with its own derived key so that a challenge is never a valid queue token nor the reverse.
func NewChallenges(secret []byte) *Challenges {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("ticketrush proof-of-work challenge v1"))
	return &Challenges{key: m.Sum(nil)}
}

// Proof is a checked proof of work: the challenge's id (for the single-use check), its difficulty and
// expiry.
type Proof struct {
	ID        string
	Bits      int
	ExpiresAt time.Time
}

// Issue returns a new challenge of the given difficulty for a user and concert.
func (c *Challenges) Issue(userID, concertID string, difficulty int, now time.Time) (string, time.Time) {
	expires := now.Add(ChallengeTTL).Truncate(time.Millisecond)
	p := make([]byte, 0, 1+8+1+16+1+len(concertID)+len(userID))
	p = append(p, challengeVersion)
	p = binary.BigEndian.AppendUint64(p, uint64(expires.UnixMilli()))
	p = append(p, byte(difficulty))
	var id [16]byte
	_, _ = rand.Read(id[:])
	p = append(p, id[:]...)
	p = append(p, byte(len(concertID)))
	p = append(p, concertID...)
	p = append(p, userID...)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(p) + "." + enc.EncodeToString(c.mac(p)), expires
}

var errPow = errors.New("proof of work invalid")

// Check verifies a challenge and nonce for a user and concert: the signature, the binding, the expiry
// and the work (SHA-256(challenge + nonce) starts with the challenge's bits of zeros). Any failure is
// one error: the caller answers POW_INVALID whatever it was.
func (c *Challenges) Check(challenge, nonce, userID, concertID string, now time.Time) (Proof, error) {
	if len(challenge) > 512 || !ValidNonce(nonce) {
		return Proof{}, errPow
	}
	body, sig, ok := strings.Cut(challenge, ".")
	if !ok {
		return Proof{}, errPow
	}
	enc := base64.RawURLEncoding.Strict()
	p, err := enc.DecodeString(body)
	if err != nil {
		return Proof{}, errPow
	}
	got, err := enc.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac(p)) {
		return Proof{}, errPow
	}
	if len(p) < 1+8+1+16+1 || p[0] != challengeVersion {
		return Proof{}, errPow
	}
	expires := time.UnixMilli(int64(binary.BigEndian.Uint64(p[1:9])))
	difficulty := int(p[9])
	id := hex.EncodeToString(p[10:26])
	rest := p[26:]
	n := int(rest[0])
	if len(rest) < 1+n || string(rest[1:1+n]) != concertID || string(rest[1+n:]) != userID {
		return Proof{}, errPow
	}
	if !now.Before(expires) || LeadingZeroBits(challenge, nonce) < difficulty {
		return Proof{}, errPow
	}
	return Proof{ID: id, Bits: difficulty, ExpiresAt: expires}, nil
}

// Pass checks a join's proof for the join script: a checked proof's id, difficulty and expiry, or
// PowInvalid for one that fails; the zero pass when the join carries none.
func (c *Challenges) Pass(challenge, nonce, userID, concertID string, now time.Time) ticketrush.JoinPass {
	if challenge == "" && nonce == "" {
		return ticketrush.JoinPass{}
	}
	p, err := c.Check(challenge, nonce, userID, concertID, now)
	if err != nil {
		return ticketrush.JoinPass{PowInvalid: true}
	}
	return ticketrush.JoinPass{PowID: p.ID, PowBits: p.Bits, PowExpires: p.ExpiresAt}
}

// ValidNonce reports whether a nonce is 1-64 printable ASCII characters (0x20-0x7e, the space
// included), as docs/api.md says.
func ValidNonce(nonce string) bool {
	if len(nonce) < 1 || len(nonce) > 64 {
		return false
	}
	for i := 0; i < len(nonce); i++ {
		if nonce[i] < 0x20 || nonce[i] > 0x7e {
			return false
		}
	}
	return true
}

// LeadingZeroBits counts the leading zero bits of SHA-256(challenge + nonce).
func LeadingZeroBits(challenge, nonce string) int {
	h := sha256.New()
	h.Write([]byte(challenge))
	h.Write([]byte(nonce))
	var sum [32]byte
	return zeroBits(h.Sum(sum[:0]))
}

// Solve finds a nonce for challenge of the given difficulty: the solver the tests, the benchmarks and
// the load generator use (a fan's client does the same in its own language). It counts up in decimal;
// on average it tries 2^difficulty nonces.
func Solve(challenge string, difficulty int) string {
	prefix := sha256.New()
	prefix.Write([]byte(challenge))
	cloner := prefix.(hash.Cloner) // the challenge's state, hashed once
	var sum [32]byte
	buf := make([]byte, 0, 20)
	for i := uint64(0); ; i++ {
		buf = strconv.AppendUint(buf[:0], i, 10)
		d, _ := cloner.Clone()
		d.Write(buf)
		d.Sum(sum[:0])
		if zeroBits(sum[:]) >= difficulty {
			return string(buf)
		}
	}
}

func zeroBits(sum []byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

func (c *Challenges) mac(p []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(p)
	return m.Sum(nil)
}
