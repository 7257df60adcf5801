package http

import (
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// The replies of the hot routes (a poll's ticket, a hold, a problem document) write their JSON by
// hand: json.Marshal's reflection and time formatting would be a third of a winning hold's handler time
// (`go test -run '^$' -bench BenchmarkHoldHandler ./internal/http/`). Each appender writes exactly what
// encoding/json writes, or reports false, and the caller falls back to encoding/json; reply_test.go
// holds the two together.

// jsonAppender is a reply value that can write its own JSON.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, bool)
}

// replyBuffers recycles reply bodies: a ResponseWriter copies what it is given (io.Writer must not
// retain p), so a body's buffer is free again once written.
var replyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// putReplyBuffer recycles a reply buffer, unless one odd reply grew it past what replies need.
func putReplyBuffer(bp *[]byte) {
	if cap(*bp) <= 16<<10 {
		replyBuffers.Put(bp)
	}
}

// Header values set on every JSON reply, shared: Header.Set would allocate a []string each time. A
// literal's capacity is its length, so a later Add to the header copies rather than writes into it.
var (
	jsonType    = []string{"application/json"}
	problemType = []string{"application/problem+json"}
)

// appendJSONString appends s as encoding/json writes a string (HTML-safe escaping), or reports false
// for a string with bytes outside ASCII, which encoding/json may rewrite (invalid UTF-8, U+2028).
func appendJSONString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return b, false
		}
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default: // other control characters and <, >, &
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// appendJSONTime appends t as time.Time's MarshalJSON writes it (RFC 3339 with nanoseconds), or
// reports false for a year MarshalJSON refuses or an offset it writes otherwise.
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := t.Zone(); off%60 != 0 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

func (r reservationJSON) appendJSON(b []byte) ([]byte, bool) {
	ok := true
	field := func(name string, s string) {
		b = append(b, name...)
		if ok {
			b, ok = appendJSONString(b, s)
		}
	}
	field(`{"id":`, r.ID)
	field(`,"status":`, r.Status)
	field(`,"concertId":`, r.ConcertID)
	field(`,"scheduleId":`, r.ScheduleID)
	field(`,"seatId":`, r.SeatID)
	b = append(b, `,"price":`...)
	b = strconv.AppendInt(b, r.Price, 10)
	b = append(b, `,"expiresAt":`...)
	var ok1, ok2 bool
	b, ok1 = appendJSONTime(b, r.ExpiresAt)
	b = append(b, `,"createdAt":`...)
	b, ok2 = appendJSONTime(b, r.CreatedAt)
	return append(b, '}'), ok && ok1 && ok2
}

func (p problem) appendJSON(b []byte) ([]byte, bool) {
	ok := true
	field := func(name string, s string) {
		b = append(b, name...)
		if ok {
			b, ok = appendJSONString(b, s)
		}
	}
	field(`{"type":`, p.Type)
	field(`,"title":`, p.Title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(p.Status), 10)
	field(`,"code":`, p.Code)
	if p.Detail != "" {
		field(`,"detail":`, p.Detail)
	}
	return append(b, '}'), ok
}

func (t ticketJSON) appendJSON(b []byte) ([]byte, bool) {
	ok := true
	field := func(name string, s string) {
		b = append(b, name...)
		if ok {
			b, ok = appendJSONString(b, s)
		}
	}
	timeField := func(name string, at *time.Time) {
		b = append(b, name...)
		if at == nil {
			b = append(b, "null"...)
		} else if ok {
			b, ok = appendJSONTime(b, *at)
		}
	}
	field(`{"token":`, t.Token)
	field(`,"concertId":`, t.ConcertID)
	field(`,"status":`, t.Status)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, t.Position, 10)
	b = append(b, `,"estimatedWaitSeconds":`...)
	b = strconv.AppendInt(b, t.EstimatedWaitSeconds, 10)
	b = append(b, `,"pollAfterSeconds":`...)
	b = strconv.AppendInt(b, t.PollAfterSeconds, 10)
	timeField(`,"activeUntil":`, t.ActiveUntil)
	b = append(b, `,"paused":`...)
	b = strconv.AppendBool(b, t.Paused)
	timeField(`,"opensAt":`, t.OpensAt)
	if t.DrawKey == nil {
		b = append(b, `,"drawKey":null`...)
	} else {
		field(`,"drawKey":`, *t.DrawKey)
	}
	b = append(b, `,"seatsAvailable":`...)
	b = strconv.AppendInt(b, t.SeatsAvailable, 10)
	if t.Pass == nil {
		b = append(b, `,"pass":null`...)
	} else {
		field(`,"pass":`, *t.Pass)
	}
	return append(b, '}'), ok
}

// appendReply appends v's JSON and a newline (as json.Encoder ends a value) when v writes its own.
func appendReply(b []byte, v any) ([]byte, bool) {
	a, ok := v.(jsonAppender)
	if !ok {
		return b, false
	}
	b, ok = a.appendJSON(b)
	return append(b, '\n'), ok
}
