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

// TestPassRotate: a rotation adds a key that signs PassPublishLead later (at once into an empty store,
// where no pass exists yet) and prints its kid (never the key); a second one while that key waits is
// refused.
func TestPassRotate(t *testing.T) {
	s := freshStores(t)
	ctx := context.Background()
	var out bytes.Buffer
	added := regexp.MustCompile(`^added pass key (\S+): published within 10s, signs from (\S+)\n$`)
	db, err := postgres.Open(ctx, s.env["DATABASE_URL"])
	require.NoError(t, err)
	defer db.Close()
	rotate := func(sentence string, after time.Duration) {
		t.Helper()
		start := time.Now()
		out.Reset()
		require.NoError(t, run(ctx, []string{"pass", "rotate"}, s.getenv, &out))
		m := added.FindStringSubmatch(out.String())
		require.NotNil(t, m, "got %q", out.String())
		keys, err := db.PassKeys(ctx)
		require.NoError(t, err)
		k := keys[len(keys)-1]
		assert.Equal(t, m[1], k.ID)
		assert.WithinDuration(t, start.Add(after), k.SignsFrom, time.Minute, sentence)
	}
	rotate("the first key, into an empty store, signs at once", 0)
	rotate("signs PassPublishLead after the rotation", 5*time.Minute)

	out.Reset()
	err = run(ctx, []string{"pass", "rotate"}, s.getenv, &out)
	assert.ErrorIs(t, err, pass.ErrKeyPending)
	assert.False(t, errors.As(err, new(usageError)), "a refusal, not a usage error")
	assert.Empty(t, out.String())
}
