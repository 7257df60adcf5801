package draw

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The key and commitment are those of docs/api.md, computed here from their definitions with the standard
// library, not with the package's own helpers.
func TestKeyAndCommitmentFollowTheContract(t *testing.T) {
	seed, err := ParseSeed(strings.Repeat("ab", 32))
	require.NoError(t, err)
	m := hmac.New(sha256.New, seed[:])
	m.Write([]byte("c1:fan-7"))
	assert.Equal(t, hex.EncodeToString(m.Sum(nil)), seed.KeyOf("c1", "fan-7").Hex())
	sum := sha256.Sum256(seed[:])
	assert.Equal(t, hex.EncodeToString(sum[:]), seed.Commitment())
}

func TestDrawIsPureAndSortedByKey(t *testing.T) {
	seed, err := NewSeed()
	require.NoError(t, err)
	users := make([]string, 200)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	a := seed.Draw("c1", users)
	rev := make([]string, len(users))
	for i, u := range users {
		rev[len(users)-1-i] = u
	}
	b := seed.Draw("c1", rev)
	require.Equal(t, a, b, "the order entrants arrived in must not matter")
	for i := 1; i < len(a); i++ {
		assert.Less(t, a[i-1].Key.Hex(), a[i].Key.Hex(), "place %d", i+1)
	}
	other, err := NewSeed()
	require.NoError(t, err)
	assert.NotEqual(t, a, other.Draw("c1", users), "another seed draws other places")
}

// A user read more than once (a read of the pre-queue while entrants are placed may repeat one) is one
// entrant, at one place.
func TestDrawCountsAUserOnce(t *testing.T) {
	seed, err := NewSeed()
	require.NoError(t, err)
	users := make([]string, 200)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	repeated := append(append([]string{}, users...), users[7], users[150], users[7])
	got := seed.Draw("c1", repeated)
	require.Equal(t, len(users), len(got), "entrants drawn")
	assert.Equal(t, seed.Draw("c1", users), got)
}

func publish(seed Seed, concert string, entrants []Entrant) (Published, string) {
	var file strings.Builder
	for _, e := range entrants {
		file.WriteString(e.Key.Hex() + "\n")
	}
	sum := sha256.Sum256([]byte(file.String()))
	return Published{ConcertID: concert, Commitment: seed.Commitment(), Seed: seed.Hex(), Entrants: len(entrants),
		EntrantsDigest: hex.EncodeToString(sum[:])}, file.String()
}

func TestVerify(t *testing.T) {
	seed, err := NewSeed()
	require.NoError(t, err)
	entrants := seed.Draw("c1", []string{"ann", "bob", "cy", "dee"})
	p, file := publish(seed, "c1", entrants)
	require.Equal(t, p.EntrantsDigest, DigestOf(entrants))

	v, err := Verify(p, strings.NewReader(file), "cy")
	require.NoError(t, err)
	require.NoError(t, v.Err())
	assert.True(t, v.OK())
	want := 0
	for i, e := range entrants {
		if e.User == "cy" {
			want = i + 1
		}
	}
	assert.Equal(t, want, v.Place)

	lines := strings.Split(strings.TrimSuffix(file, "\n"), "\n")
	other, _ := NewSeed()
	tests := []struct {
		name string
		give func(p *Published) string
	}{
		{"two lines swapped", func(*Published) string {
			l := append([]string(nil), lines...)
			l[0], l[1] = l[1], l[0]
			return strings.Join(l, "\n") + "\n"
		}},
		{"a line dropped", func(*Published) string { return strings.Join(lines[1:], "\n") + "\n" }},
		{"a key altered", func(*Published) string {
			l := append([]string(nil), lines...)
			l[3] = strings.Repeat("f", 64)
			return strings.Join(l, "\n") + "\n"
		}},
		{"another seed", func(p *Published) string { p.Seed = other.Hex(); return file }},
		{"another digest", func(p *Published) string { p.EntrantsDigest = strings.Repeat("0", 64); return file }},
		{"a user not drawn", func(*Published) string { return strings.Join(lines[:0], "") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := p
			keys := tt.give(&p)
			v, err := Verify(p, strings.NewReader(keys), "cy")
			require.NoError(t, err)
			assert.Error(t, v.Err())
			assert.False(t, v.OK())
		})
	}
}
