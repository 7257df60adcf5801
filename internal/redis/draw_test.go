package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An Entrants cursor reads back as the shard, part and last user it was made of (a user may have a
// colon); "" is shard 0's first page, and anything else is an error.
func TestEntrantsCursor(t *testing.T) {
	for _, give := range []entrantsCursor{
		{0, readUp, "", ""}, {0, readUp, "1764326374000", "fan-1"}, {3, readDown, "", ""}, {63, readDown, "-12", "a:b"},
		{1, readUp, "1.5", "fan:2:"},
	} {
		got, err := parseEntrantsCursor(give.String())
		require.NoError(t, err, give.String())
		assert.Equal(t, give, got)
	}
	first, err := parseEntrantsCursor("")
	require.NoError(t, err)
	assert.Equal(t, entrantsCursor{0, readUp, "", ""}, first)
	for _, give := range []string{"5", "0:up:", "a:up::", "-1:up::", "0:sideways::", "0:up:12:", "0:up::fan", "0:up:x:fan",
		"0:up:inf:fan", "0:down:NaN:fan"} {
		_, err := parseEntrantsCursor(give)
		assert.Error(t, err, give)
	}
}

// TestEntrantsWhileAnotherPlaces reads a sealed pre-queue in small pages while, between every two pages,
// a batch of entrants is placed as line_place places them (score -seq, in draw order, some read already
// and some not; every other batch with the last one read, where the next page starts), until half are:
// the pages hold every entrant, placed or not, whatever placing does to their ranks, across runs of
// equal entry times longer than a page too.
func TestEntrantsWhileAnotherPlaces(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
				ctx := context.Background()
				mustLoad(t, s, shardedConcert("en", shards, nil))
				k := s.keys.Concert("en")
				pre := func(u string) string {
					if shards == 1 {
						return k.Prequeue()
					}
					return k.Shard(LineShard(u, shards)).Prequeue()
				}
				const n = 300
				users := make([]string, n)
				for i := range users {
					users[i] = fmt.Sprintf("u%03d", i)
					at := 1000 + i/4 // runs of four equal entry times, and one of 60
					if i >= 100 && i < 160 {
						at = 5000
					}
					require.NoError(t, c.Do(ctx, c.B().Zadd().Key(pre(users[i])).ScoreMember().ScoreMember(float64(at), users[i]).Build()).Error())
				}
				order := slices.Clone(users) // the draw's order: any but the entry order
				slices.SortFunc(order, func(a, b string) int { return strings.Compare(reverse(a), reverse(b)) })

				seen, pages, placed := map[string]bool{}, 0, map[string]bool{}
				place := func(u string) {
					if !placed[u] && len(placed) < n/2 {
						placed[u] = true
						require.NoError(t, c.Do(ctx, c.B().Zadd().Key(pre(u)).Xx().ScoreMember().
							ScoreMember(float64(-len(placed)), u).Build()).Error())
					}
				}
				for cursor, next := "", 0; ; {
					page, after, err := s.Draws.Entrants(ctx, "en", cursor, 7)
					require.NoError(t, err)
					for _, u := range page {
						seen[u] = true
					}
					if pages++; pages%2 == 0 && len(page) > 0 {
						place(page[len(page)-1]) // the last one read, where the next page starts
					}
					for range 4 { // a batch placed meanwhile, up to half the entrants
						for next < n && placed[order[next]] {
							next++
						}
						if next < n {
							place(order[next])
						}
					}
					if after == "" {
						break
					}
					cursor = after
				}
				assert.Greater(t, pages, 20, "read in many pages")
				assert.Equal(t, n/2, len(placed), "half the entrants placed while they were read")
				var missed []string
				for _, u := range users {
					if !seen[u] {
						missed = append(missed, u)
					}
				}
				assert.Empty(t, missed, "entrants no page had")
			})
		})
	}
}

func reverse(s string) string {
	r := []byte(s)
	slices.Reverse(r)
	return string(r)
}
