package redis

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/lua"
)

var (
	errorReply  = regexp.MustCompile(`redis\.error_reply\('([A-Z_]+)'\)`)
	headerCodes = regexp.MustCompile(`\b[A-Z]{2,}(?:_[A-Z]+)+\b`)
)

// headerErrors returns the codes a script's header lists under "Errors:" (the line and its
// continuation lines).
func headerErrors(src string) []string {
	var codes []string
	in := false
	for _, line := range strings.Split(src, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		text := strings.TrimSpace(strings.TrimPrefix(line, "--"))
		switch {
		case strings.HasPrefix(text, "Errors:"):
			in = true
			text = strings.TrimPrefix(text, "Errors:")
		case in && strings.HasPrefix(line, "--  "):
		default:
			in = false
		}
		if in {
			codes = append(codes, headerCodes.FindAllString(text, -1)...)
		}
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// TestScriptErrorCodes checks every error reply of every script against the error table: each code
// a script can reply is a code of ticketrush.Codes, mapError turns it into the error of that code, and
// the script's header lists exactly the codes its body replies.
func TestScriptErrorCodes(t *testing.T) {
	c, _ := dbtest.MiniRedis(t)
	for _, name := range lua.Names() {
		src := lua.Source(name)
		var body []string
		for _, m := range errorReply.FindAllStringSubmatch(src, -1) {
			body = append(body, m[1])
		}
		slices.Sort(body)
		body = slices.Compact(body)
		assert.Equal(t, body, headerErrors(src), "%s: the header's Errors: and the body's error replies differ", name)
		for _, code := range body {
			info, ok := ticketrush.LookupCode(ticketrush.Code(code))
			if !assert.True(t, ok, "%s replies %s, which the error table lacks", name, code) {
				continue
			}
			// A real error reply, through the same path as a script's.
			err := c.Do(context.Background(), c.B().Eval().Script("return redis.error_reply('"+code+"')").Numkeys(0).Build()).Error()
			require.Error(t, err)
			got, mapped := mapError(err)
			assert.Equal(t, code, got)
			assert.Equal(t, info.Code, ticketrush.ErrorCode(mapped), "%s: %s maps to another code", name, code)
		}
	}
	// Anything else from Redis is unavailability, not a guess at a code.
	err := c.Do(context.Background(), c.B().Eval().Script("return redis.error_reply('SEAT_GONE')").Numkeys(0).Build()).Error()
	code, mapped := mapError(err)
	assert.Equal(t, "REDIS", code)
	assert.ErrorIs(t, mapped, ticketrush.ErrUnavailable)
}
