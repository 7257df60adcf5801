package config

import (
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
		"ADMIN_TOKEN":        "admin",
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
	assert.Equal(t, "tr", c.RedisKeyPrefix)
	assert.True(t, c.Has(RoleScheduler))
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
		{"bad key prefix", map[string]string{"REDIS_KEY_PREFIX": "a{b}"}, []string{"REDIS_KEY_PREFIX: want 1-32 chars"}},
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

func TestRolesSplit(t *testing.T) {
	m := valid()
	m["ROLES"] = " api , api,writebehind"
	c, err := Load(env(m))
	require.NoError(t, err)
	assert.Equal(t, []string{"api", "writebehind"}, c.Roles)
	assert.False(t, c.Has(RoleScheduler))
}
