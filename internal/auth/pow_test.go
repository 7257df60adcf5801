package auth

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChallengeCheck(t *testing.T) {
	c := NewChallenges(secret)
	now := time.UnixMilli(1_800_000_000_000)
	ch, expires := c.Issue("fan-1", "c1", 8, now)
	assert.Equal(t, now.Add(ChallengeTTL), expires)
	nonce := Solve(ch, 8)
	require.GreaterOrEqual(t, LeadingZeroBits(ch, nonce), 8)

	p, err := c.Check(ch, nonce, "fan-1", "c1", now)
	require.NoError(t, err)
	assert.Equal(t, 8, p.Bits)
	assert.Equal(t, expires, p.ExpiresAt)
	assert.Len(t, p.ID, 32)
	ch2, _ := c.Issue("fan-1", "c1", 8, now)
	p2, err := c.Check(ch2, Solve(ch2, 8), "fan-1", "c1", now)
	require.NoError(t, err)
	assert.NotEqual(t, p.ID, p2.ID, "every challenge has its own id")

	wrong := "0"
	for LeadingZeroBits(ch, wrong) >= 8 {
		wrong += "0"
	}
	body, sig, _ := strings.Cut(ch, ".")
	other, _ := NewChallenges([]byte(strings.Repeat("o", 32))).Issue("fan-1", "c1", 8, now)
	tests := []struct {
		name                   string
		challenge, nonce, user string
		concert                string
		at                     time.Time
	}{
		{"wrong nonce", ch, wrong, "fan-1", "c1", now},
		{"another user's", ch, nonce, "fan-2", "c1", now},
		{"another concert's", ch, nonce, "fan-1", "c2", now},
		{"expired", ch, nonce, "fan-1", "c1", expires},
		{"forged", other, Solve(other, 8), "fan-1", "c1", now},
		{"altered sig padding", body + "." + paddingFlipped(sig), nonce, "fan-1", "c1", now},
		{"empty nonce", ch, "", "fan-1", "c1", now},
		{"nonce too long", ch, strings.Repeat("a", 65), "fan-1", "c1", now},
		{"nonce not printable", ch, "a\tb", "fan-1", "c1", now},
		{"garbage", "x.y", nonce, "fan-1", "c1", now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Check(tt.challenge, tt.nonce, tt.user, tt.concert, tt.at)
			assert.Error(t, err)
		})
	}
}

// TestNonceIsPrintableASCII: a nonce is 1-64 printable characters (docs/api.md, "Abuse: rate limits, proof
// of work, access codes"), the space among them.
func TestNonceIsPrintableASCII(t *testing.T) {
	for _, ok := range []string{"a", "a b", " ~!", strings.Repeat("z", 64)} {
		assert.True(t, ValidNonce(ok), "%q", ok)
	}
	for _, bad := range []string{"", "a\tb", "a\x7fb", "é", strings.Repeat("z", 65)} {
		assert.False(t, ValidNonce(bad), "%q", bad)
	}
}

// FuzzChallengeCheck: no input panics, and what passes is a challenge we issued, solved.
func FuzzChallengeCheck(f *testing.F) {
	c := NewChallenges(secret)
	now := time.UnixMilli(1_800_000_000_000)
	ch, _ := c.Issue("fan-1", "c1", 4, now)
	f.Add(ch, Solve(ch, 4))
	f.Add("a.b", "0")
	f.Fuzz(func(t *testing.T, challenge, nonce string) {
		p, err := c.Check(challenge, nonce, "fan-1", "c1", now)
		if err == nil {
			assert.GreaterOrEqual(t, LeadingZeroBits(challenge, nonce), p.Bits)
			assert.True(t, now.Before(p.ExpiresAt))
		}
	})
}

// BenchmarkSolve is the client's cost of a proof on this machine, one challenge per iteration; it
// reports the median (the mean of a geometric distribution is pulled up by its tail):
// go test -run XXX -bench Solve -benchtime 30x ./internal/auth/
func BenchmarkSolve(b *testing.B) {
	c := NewChallenges(secret)
	for _, bits := range []int{16, 18, 20} {
		b.Run(fmt.Sprintf("bits=%d", bits), func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				ch, _ := c.Issue("fan-1", "c1", bits, time.Now())
				start := time.Now()
				Solve(ch, bits)
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
		})
	}
}

// BenchmarkChallengeCheck is the server's cost of checking a proof (signature, binding, expiry, one
// SHA-256 for the work), the same at any difficulty:
//
//	go test -run '^$' -bench ChallengeCheck -count 5 ./internal/auth/
func BenchmarkChallengeCheck(b *testing.B) {
	c := NewChallenges(secret)
	now := time.Now()
	ch, _ := c.Issue("fan-1", "c1", 12, now)
	nonce := Solve(ch, 12)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Check(ch, nonce, "fan-1", "c1", now); err != nil {
			b.Fatal(err)
		}
	}
}
