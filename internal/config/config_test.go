package config

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func valid() map[string]string {
	return map[string]string{
		"JWT_SECRET":         strings.Repeat("j", 32),
		"QUEUE_TOKEN_SECRET": strings.Repeat("q", 32),
		"ADMIN_TOKEN":        strings.Repeat("a", 32),
	}
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(valid()))
	require.NoError(t, err)
	assert.Equal(t, ":8080", c.HTTPAddr)
	assert.Equal(t, "redis://127.0.0.1:6379/0", c.RedisURL)
	assert.Equal(t, "postgres://postgres@127.0.0.1:5432/ticketrush?sslmode=disable", c.DatabaseURL)
	assert.Equal(t, []string{"api", "scheduler", "writebehind"}, c.Roles)
	assert.Equal(t, 100*time.Millisecond, c.AdmitTick)
	assert.LessOrEqual(t, c.CatalogRefresh, 500*time.Millisecond,
		"a PATCH is in force within a second on every instance: the refresh and its read must fit in it")
	assert.Equal(t, "tr", c.RedisKeyPrefix)
	assert.True(t, c.Has(RoleScheduler))
	assert.Equal(t, "ticketrush", c.PassIssuer)
	assert.Equal(t, 300*time.Second, c.PassTTL)
}

func TestLoadPass(t *testing.T) {
	give := valid()
	give["PASS_ISSUER"], give["PASS_TTL_SECONDS"] = "https://tickets.example", "3600"
	c, err := Load(env(give))
	require.NoError(t, err)
	assert.Equal(t, "https://tickets.example", c.PassIssuer)
	assert.Equal(t, time.Hour, c.PassTTL)
	assert.Empty(t, c.PassSiteURL, "no site unless one is set")
	give["PASS_SITE_URL"] = "https://shop.example/tickets?lang=ko"
	c, err = Load(env(give))
	require.NoError(t, err)
	assert.Equal(t, "https://shop.example/tickets?lang=ko", c.PassSiteURL)
}

// TestPassKeySchedule holds the pass keys' schedule to docs/pass.md "Rotation": a rotated key is
// loaded by every instance, and listed by every key set a verifier may still cache, before it signs.
func TestPassKeySchedule(t *testing.T) {
	assert.Greater(t, PassPublishLead, PassKeyReload+PassKeySetAge+PassClockSkew)
	assert.Less(t, MinPassTTL, MaxPassTTL)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		give map[string]string
		want []string
	}{
		{"nothing set", map[string]string{}, []string{"JWT_SECRET: required", "QUEUE_TOKEN_SECRET: required", "ADMIN_TOKEN: required"}},
		{"short secret", map[string]string{"JWT_SECRET": "short"}, []string{"JWT_SECRET: required, at least 32 bytes (got 5)"}},
		{"bad roles", map[string]string{"ROLES": "api,web"}, []string{`ROLES: unknown role "web"`}},
		{"bad redis", map[string]string{"REDIS_URL": "http://x"}, []string{"REDIS_URL: want redis://"}},
		{"bad addr", map[string]string{"HTTP_ADDR": "8080"}, []string{"HTTP_ADDR: want host:port"}},
		{"bad database", map[string]string{"DATABASE_URL": "mysql://x"}, []string{"DATABASE_URL: want postgres://"}},
		{"bad rate", map[string]string{"USER_RATE_LIMIT": "-1"}, []string{"USER_RATE_LIMIT: want an integer"}},
		{"bad cidr", map[string]string{"TRUSTED_PROXY_CIDRS": "10.0.0.0/8, nope"}, []string{`TRUSTED_PROXY_CIDRS: want CIDRs such as 10.0.0.0/8, got "nope"`}},
		{"redis password masked", map[string]string{"REDIS_URL": "http://user:hunter2@x"}, []string{"REDIS_URL: want redis://", "xxxxx"}},
		{"pass ttl too short", map[string]string{"PASS_TTL_SECONDS": "9"}, []string{`PASS_TTL_SECONDS: want whole seconds 10-3600, got "9"`}},
		{"pass ttl too long", map[string]string{"PASS_TTL_SECONDS": "3601"}, []string{`PASS_TTL_SECONDS: want whole seconds 10-3600, got "3601"`}},
		{"pass ttl not a number", map[string]string{"PASS_TTL_SECONDS": "5m"}, []string{`PASS_TTL_SECONDS: want whole seconds 10-3600, got "5m"`}},
		{"bad key prefix", map[string]string{"REDIS_KEY_PREFIX": "a{b}"}, []string{"REDIS_KEY_PREFIX: want 1-32 chars"}},
		{"pass site not absolute", map[string]string{"PASS_SITE_URL": "/shop"}, []string{`PASS_SITE_URL: want an absolute http or https URL, got "/shop"`}},
		{"pass site not http", map[string]string{"PASS_SITE_URL": "javascript:alert(1)"}, []string{`PASS_SITE_URL: want an absolute http or https URL, got "javascript:alert(1)"`}},
		{"pass site with a fragment", map[string]string{"PASS_SITE_URL": "https://shop.example/#x"}, []string{"PASS_SITE_URL: want a URL without a fragment"}},
		{"pass site with a pass", map[string]string{"PASS_SITE_URL": "https://shop.example/?pass=x"}, []string{"PASS_SITE_URL: want a URL without a pass parameter"}},
		{"writers zero", map[string]string{"WRITEBEHIND_WRITERS": "0"}, []string{`WRITEBEHIND_WRITERS: want a positive integer, got "0"`}},
		{"writers too many", map[string]string{"WRITEBEHIND_WRITERS": "65"}, []string{`WRITEBEHIND_WRITERS: want a positive integer of at most 64, got "65"`}},
		{"batch size not a number", map[string]string{"WRITEBEHIND_BATCH_SIZE": "4k"}, []string{`WRITEBEHIND_BATCH_SIZE: want a positive integer, got "4k"`}},
		{"batch size negative", map[string]string{"WRITEBEHIND_BATCH_SIZE": "-1"}, []string{`WRITEBEHIND_BATCH_SIZE: want a positive integer, got "-1"`}},
		{"read count zero", map[string]string{"WRITEBEHIND_READ_COUNT": "0"}, []string{`WRITEBEHIND_READ_COUNT: want a positive integer, got "0"`}},
		{"max read count too big", map[string]string{"WRITEBEHIND_MAX_READ_COUNT": "1000001"}, []string{`WRITEBEHIND_MAX_READ_COUNT: want a positive integer of at most 1000000, got "1000001"`}},
		{"max read count below read count", map[string]string{"WRITEBEHIND_READ_COUNT": "2000", "WRITEBEHIND_MAX_READ_COUNT": "1500"}, []string{"WRITEBEHIND_MAX_READ_COUNT: want at least WRITEBEHIND_READ_COUNT (2000), got 1500"}},
		{"max read count below the default read count", map[string]string{"WRITEBEHIND_MAX_READ_COUNT": "500"}, []string{"WRITEBEHIND_MAX_READ_COUNT: want at least WRITEBEHIND_READ_COUNT (1000), got 500"}},
		{"claim idle zero", map[string]string{"WRITEBEHIND_CLAIM_IDLE_SECONDS": "0"}, []string{`WRITEBEHIND_CLAIM_IDLE_SECONDS: want a positive integer, got "0"`}},
		{"claim idle a duration", map[string]string{"WRITEBEHIND_CLAIM_IDLE_SECONDS": "10s"}, []string{`WRITEBEHIND_CLAIM_IDLE_SECONDS: want a positive integer, got "10s"`}},
		{"claim idle too long", map[string]string{"WRITEBEHIND_CLAIM_IDLE_SECONDS": "16"}, []string{`WRITEBEHIND_CLAIM_IDLE_SECONDS: want a positive integer of at most 15, got "16"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			give := valid()
			if len(tt.give) == 0 {
				give = map[string]string{}
			}
			for k, v := range tt.give {
				give[k] = v
			}
			_, err := Load(env(give))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestLoadWriteBehind: the write-behind's settings, their defaults (writebehind.DefaultConfig's:
// TestWriteBehindSettingsPassDown) and values given.
func TestLoadWriteBehind(t *testing.T) {
	c, err := Load(env(valid()))
	require.NoError(t, err)
	assert.Equal(t, []int{2, 4000, 1000, 16000}, []int{c.WriteBehindWriters, c.WriteBehindBatchSize, c.WriteBehindReadCount, c.WriteBehindMaxReadCount})
	assert.Equal(t, 10*time.Second, c.WriteBehindClaimIdle)

	m := valid()
	m["WRITEBEHIND_WRITERS"], m["WRITEBEHIND_BATCH_SIZE"] = "64", "1"
	m["WRITEBEHIND_READ_COUNT"], m["WRITEBEHIND_MAX_READ_COUNT"] = "500", "500"
	m["WRITEBEHIND_CLAIM_IDLE_SECONDS"] = "15"
	c, err = Load(env(m))
	require.NoError(t, err)
	assert.Equal(t, []int{64, 1, 500, 500}, []int{c.WriteBehindWriters, c.WriteBehindBatchSize, c.WriteBehindReadCount, c.WriteBehindMaxReadCount})
	assert.Equal(t, MaxWriteBehindClaimIdle, c.WriteBehindClaimIdle)
}

func TestLoadAbuse(t *testing.T) {
	c, err := Load(env(valid()))
	require.NoError(t, err)
	assert.Equal(t, 20, c.UserRateLimit)
	assert.Equal(t, 40, c.UserRateBurst)
	assert.Empty(t, c.TrustedProxyCIDRs)

	m := valid()
	m["USER_RATE_LIMIT"], m["USER_RATE_BURST"] = "0", "0"
	m["TRUSTED_PROXY_CIDRS"] = "10.0.0.0/8, 192.168.1.7,::1"
	m["JWT_ISSUER"], m["JWT_AUDIENCE"] = "login", "ticketrush"
	c, err = Load(env(m))
	require.NoError(t, err)
	assert.Equal(t, 0, c.UserRateLimit)
	assert.Equal(t, "[10.0.0.0/8 192.168.1.7/32 ::1/128]", fmt.Sprint(c.TrustedProxyCIDRs))
	assert.Equal(t, "login", c.JWTIssuer)
	assert.Equal(t, "ticketrush", c.JWTAudience)
}

// TestRateLimitOffByEither: USER_RATE_LIMIT and USER_RATE_BURST, "0 turns it off" (docs/api.md, "Abuse:
// rate limits, proof of work, access codes"): either of the two at 0 turns the per-user limit off (the
// service does not refuse to start).
func TestRateLimitOffByEither(t *testing.T) {
	for _, name := range []string{"USER_RATE_LIMIT", "USER_RATE_BURST"} {
		m := valid()
		m[name] = "0"
		c, err := Load(env(m))
		require.NoError(t, err, name)
		assert.Equal(t, []int{0, 0}, []int{c.UserRateLimit, c.UserRateBurst}, "%s=0: the limit is off", name)
	}
}

// TestLoadMasksPasswords: no configuration error echoes a credential.
func TestLoadMasksPasswords(t *testing.T) {
	m := valid()
	m["REDIS_URL"] = "http://user:hunter2@x"
	_, err := Load(env(m))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Equal(t, "redis://:xxxxx@h:6379/0", Redact("redis://:s3cret@h:6379/0"))
}

func TestRolesSplit(t *testing.T) {
	m := valid()
	m["ROLES"] = " api , api,writebehind"
	c, err := Load(env(m))
	require.NoError(t, err)
	assert.Equal(t, []string{"api", "writebehind"}, c.Roles)
	assert.False(t, c.Has(RoleScheduler))
}

// TestShortAdminTokenWarns: ADMIN_TOKEN need only be set (README.md's configuration; JWT_SECRET and
// QUEUE_TOKEN_SECRET are bounded at 32 bytes): a short one loads, with a warning for the log; an empty one
// is refused.
func TestShortAdminTokenWarns(t *testing.T) {
	c, err := Load(env(valid()))
	require.NoError(t, err)
	assert.Empty(t, c.Warnings)

	m := valid()
	m["ADMIN_TOKEN"] = "admin"
	c, err = Load(env(m))
	require.NoError(t, err, "a short ADMIN_TOKEN starts the service")
	assert.Equal(t, "admin", c.AdminToken)
	require.Len(t, c.Warnings, 1)
	assert.Contains(t, c.Warnings[0], "ADMIN_TOKEN is 5 bytes")

	m["ADMIN_TOKEN"] = ""
	_, err = Load(env(m))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ADMIN_TOKEN: required")
}
