package ticketrush

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The id rules as docs/api.md writes them; the checks read a table of bytes instead.
var idRules = []struct {
	name  string
	check func(string) bool
	rule  *regexp.Regexp
	most  int
}{
	{"user id", ValidUserID, regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`), 64},
	{"concert or schedule id", ValidID, regexp.MustCompile(`^[a-z0-9]{1,32}$`), 32},
	{"section name", validSection, regexp.MustCompile(`^[A-Za-z0-9_]{1,16}$`), 16},
}

// TestIDChecksKeepTheRules: each check agrees with its rule on every byte alone and inside an id, on
// every length around its bound, and on text that is not ASCII.
func TestIDChecksKeepTheRules(t *testing.T) {
	for _, r := range idRules {
		t.Run(r.name, func(t *testing.T) {
			var gives []string
			for b := 0; b < 256; b++ {
				gives = append(gives, string([]byte{byte(b)}), "a"+string([]byte{byte(b)})+"9")
			}
			for n := 0; n <= r.most+1; n++ {
				gives = append(gives, strings.Repeat("a", n), strings.Repeat("7", n))
			}
			gives = append(gives, "공연", "aé", "a\x00b", "a\nb", "a b", "a.b", "A_-z")
			for _, give := range gives {
				assert.Equal(t, r.rule.MatchString(give), r.check(give), "%q", give)
			}
		})
	}
}

func FuzzIDChecksKeepTheRules(f *testing.F) {
	f.Add("fan_1")
	f.Add("c1a2b3")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range idRules {
			assert.Equal(t, r.rule.MatchString(s), r.check(s), "%s %q", r.name, s)
		}
	})
}

func BenchmarkValidID(b *testing.B) {
	for _, r := range idRules {
		b.Run(strings.ReplaceAll(r.name, " ", "_"), func(b *testing.B) {
			id := strings.Repeat("a1", r.most/4)
			b.Run("table", func(b *testing.B) {
				for b.Loop() {
					r.check(id)
				}
			})
			b.Run("regexp", func(b *testing.B) {
				for b.Loop() {
					r.rule.MatchString(id)
				}
			})
		})
	}
}
