package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/pass"
	"github.com/ticketrush/ticketrush/internal/postgres"
)

// TestPassRotateCommandLine: -h prints the usage and a bad command line is a usage error, both without
// opening anything.
func TestPassRotateCommandLine(t *testing.T) {
	s := freshStores(t)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"pass", "rotate", "-h"}, s.getenv, &out))
	assert.True(t, strings.HasPrefix(out.String(), "usage: ticketrush pass rotate"), "got %q", out.String())
	for _, args := range [][]string{{"pass"}, {"pass", "spin"}, {"pass", "rotate", "stray"}, {"pass", "rotate", "--bogus"}} {
		err := run(context.Background(), args, s.getenv, &out)
		assert.True(t, errors.As(err, new(usageError)), "%v: want a usage error, got %T %v", args, err, err)
	}
	s.requireUntouched(t, "pass rotate -h and bad command lines")
}

// TestPassRotate: a rotation adds a key that signs PassPublishLead later and prints its kid (never the
// key); a second one while that key waits is refused.
func TestPassRotate(t *testing.T) {
	s := freshStores(t)
	ctx := context.Background()
	var out bytes.Buffer
	start := time.Now()
	require.NoError(t, run(ctx, []string{"pass", "rotate"}, s.getenv, &out))
	m := regexp.MustCompile(`^added pass key (\S+): published within 10s, signs from (\S+)\n$`).FindStringSubmatch(out.String())
	require.NotNil(t, m, "got %q", out.String())

	db, err := postgres.Open(ctx, s.env["DATABASE_URL"])
	require.NoError(t, err)
	defer db.Close()
	keys, err := db.PassKeys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	assert.Equal(t, m[1], keys[0].ID)
	assert.WithinDuration(t, start.Add(5*time.Minute), keys[0].SignsFrom, time.Minute, "signs PassPublishLead after the rotation")

	out.Reset()
	err = run(ctx, []string{"pass", "rotate"}, s.getenv, &out)
	assert.ErrorIs(t, err, pass.ErrKeyPending)
	assert.False(t, errors.As(err, new(usageError)), "a refusal, not a usage error")
	assert.Empty(t, out.String())
}
