package redis

import (
	"fmt"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// replyArray reads a script's array reply; the first conversion error sticks in err.
type replyArray struct {
	items []rueidis.RedisMessage
	err   error
}

// reply checks that msg is an array of exactly n items: a reply of another shape is a script and Go
// that disagree, an error rather than a guess.
func reply(msg rueidis.RedisMessage, n int) (*replyArray, error) {
	items, err := msg.ToArray()
	if err != nil {
		return nil, fmt.Errorf("script reply: %w", err)
	}
	if len(items) != n {
		return nil, fmt.Errorf("script reply has %d items, want %d", len(items), n)
	}
	return &replyArray{items: items}, nil
}

func (r *replyArray) fail(i int, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("reply item %d: %w", i, err)
	}
}

// int reads item i, which must be an integer (Lua numbers reach Redis as integers).
func (r *replyArray) int(i int) int64 {
	v, err := r.items[i].ToInt64()
	if err != nil {
		r.fail(i, err)
	}
	return v
}

// str reads item i, which must be a string.
func (r *replyArray) str(i int) string {
	v, err := r.items[i].ToString()
	if err != nil {
		r.fail(i, err)
	}
	return v
}

// flag reads item i, which must be 0 or 1.
func (r *replyArray) flag(i int) bool {
	v := r.int(i)
	if v != 0 && v != 1 {
		r.fail(i, fmt.Errorf("%d is not 0 or 1", v))
	}
	return v == 1
}

// status reads item i, which must be one of want.
func (r *replyArray) status(i int, want ...ticketrush.QueueStatus) ticketrush.QueueStatus {
	v := ticketrush.QueueStatus(r.str(i))
	if r.err == nil && !slices.Contains(want, v) {
		r.fail(i, fmt.Errorf("unexpected status %q", v))
	}
	return v
}

func fromMillis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
