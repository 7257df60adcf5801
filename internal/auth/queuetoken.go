package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// tokenNamespace seeds the token UUIDs: a token's id is the SHA-1 UUID of (concert, user, seq), so the
// same arrival always yields the same token and a rejoin hands back the token the fan already has
// without Redis storing it.
var tokenNamespace = uuid.MustParse("6f1b8b8e-52a4-4c7c-9d55-1d8f0f3c2a10")

const tokenVersion = 1

// QueueTokens signs and verifies queue tokens. A token is base64url(payload) "." base64url(HMAC-SHA256)
// where payload = version(1) | uuid(16) | uvarint seq | len+concert | user. A token's claims never
// change, so the claims of tokens that verified are kept in a bounded cache (about 30 MiB at most): a
// fan's every poll and gated call presents the same token, and its HMAC and decoding were a fifth of
// what a poll cost.
type QueueTokens struct {
	pool  sync.Pool // of hash.Hash keyed with the secret: HMAC setup is most of a verify's cost
	cache *cache[ticketrush.QueueClaims]
}

// NewQueueTokens returns a signer keyed with secret.
func NewQueueTokens(secret []byte) *QueueTokens {
	key := append([]byte(nil), secret...)
	return &QueueTokens{pool: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }},
		cache: newCache[ticketrush.QueueClaims]()}
}

// NewClaims returns the claims of the token for a user's arrival seq in a concert's line.
func NewClaims(concertID, userID string, seq uint64) ticketrush.QueueClaims {
	name := concertID + "/" + userID + "/" + strconv.FormatUint(seq, 10)
	return ticketrush.QueueClaims{
		ID:        uuid.NewSHA1(tokenNamespace, []byte(name)),
		UserID:    userID,
		ConcertID: concertID,
		Seq:       seq,
	}
}

// Sign returns the token for c.
func (q *QueueTokens) Sign(c ticketrush.QueueClaims) string {
	p := make([]byte, 0, 1+16+binary.MaxVarintLen64+1+len(c.ConcertID)+len(c.UserID))
	p = append(p, tokenVersion)
	p = append(p, c.ID[:]...)
	p = binary.AppendUvarint(p, c.Seq)
	p = append(p, byte(len(c.ConcertID)))
	p = append(p, c.ConcertID...)
	p = append(p, c.UserID...)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(p) + "." + enc.EncodeToString(q.mac(p))
}

var (
	errMalformed    = errors.New("malformed")
	errBadSignature = errors.New("bad signature")
)

// Verify checks the signature in constant time and returns the claims, or ErrQueueTokenInvalid.
func (q *QueueTokens) Verify(token string) (ticketrush.QueueClaims, error) {
	if c, ok := q.cache.get(token); ok {
		return c, nil
	}
	c, err := q.verify(token)
	if err != nil {
		if errors.Is(err, errMalformed) {
			return ticketrush.QueueClaims{}, ticketrush.WithDetail(ticketrush.ErrQueueTokenInvalid,
				"the queue token is malformed: send X-Queue-Token exactly as the join returned it")
		}
		return ticketrush.QueueClaims{}, ticketrush.WithDetail(ticketrush.ErrQueueTokenInvalid,
			"the queue token's signature does not verify: it was altered, or not issued by this service")
	}
	q.cache.put(token, c)
	return c, nil
}

func (q *QueueTokens) verify(token string) (ticketrush.QueueClaims, error) {
	var c ticketrush.QueueClaims
	if len(token) > 512 {
		return c, errMalformed
	}
	// encoding/base64 skips CR and LF anywhere in its input, even in Strict mode: a token with one
	// inserted would decode to the signed bytes and verify, one token spelled many ways.
	if strings.ContainsAny(token, "\r\n") {
		return c, errMalformed
	}
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return c, errMalformed
	}
	enc := base64.RawURLEncoding.Strict() // altered padding bits are an altered token
	p, err := enc.DecodeString(body)
	if err != nil {
		return c, errMalformed
	}
	got, err := enc.DecodeString(sig)
	if err != nil {
		return c, errMalformed
	}
	if !hmac.Equal(got, q.mac(p)) {
		return c, errBadSignature
	}
	// The payload is ours from here on; parse defensively all the same.
	if len(p) < 1+16+1 || p[0] != tokenVersion {
		return c, errMalformed
	}
	copy(c.ID[:], p[1:17])
	seq, n := binary.Uvarint(p[17:])
	if n <= 0 {
		return c, errMalformed
	}
	rest := p[17+n:]
	if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
		return c, errMalformed
	}
	c.Seq = seq
	c.ConcertID = string(rest[1 : 1+int(rest[0])])
	c.UserID = string(rest[1+int(rest[0]):])
	return c, nil
}

func (q *QueueTokens) mac(p []byte) []byte {
	h := q.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(p)
	sum := h.Sum(nil)
	q.pool.Put(h)
	return sum
}
