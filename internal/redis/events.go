package redis

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// EventSource is the stream an entry was read from: a concert's, or a wallet shard's.
type EventSource struct {
	Stream      string
	DeadLetters string // its dead-letter stream (deadletter.go)
	ConcertID   string // "" for a wallet shard
	Shard       int    // the wallet shard, or the line shard of a concert's line shard stream
	Schedule    string // the schedule of a concert's seat slot stream (seatslot.go), "" for any other
}

// WriteBehindGroup is the consumer group in which the write-behind reads every event stream (unless
// configured otherwise).
const WriteBehindGroup = "writebehind"

// StreamGroup is one consumer group of one stream, from XINFO GROUPS.
type StreamGroup struct {
	Name          string
	Pending       int64
	LastDelivered string
	Lag           int64 // entries not yet delivered; -1 when Redis cannot tell
}

// ParseStreamGroups reads the reply of XINFO GROUPS.
func ParseStreamGroups(msg rueidis.RedisMessage) ([]StreamGroup, error) {
	items, err := msg.ToArray()
	if err != nil {
		return nil, err
	}
	out := make([]StreamGroup, 0, len(items))
	for _, it := range items {
		m, err := it.AsMap()
		if err != nil {
			return nil, err
		}
		g := StreamGroup{Lag: -1}
		if v, ok := m["name"]; ok {
			g.Name, _ = v.ToString()
		}
		if v, ok := m["pending"]; ok {
			g.Pending, _ = v.AsInt64()
		}
		if v, ok := m["last-delivered-id"]; ok {
			g.LastDelivered, _ = v.ToString()
		}
		if v, ok := m["lag"]; ok && !v.IsNil() {
			g.Lag, _ = v.AsInt64()
		}
		out = append(out, g)
	}
	return out, nil
}

// ConcertEvents is the event stream of a concert.
func (k Keys) ConcertEvents(concertID string) EventSource {
	c := k.Concert(concertID)
	return EventSource{Stream: c.Events(), DeadLetters: c.DeadLetters(), ConcertID: concertID}
}

// LineEvents is the event stream of shard n of a concert's line spread over several slots (its joins),
// the line's shards tagged as layout l has them.
func (k Keys) LineEvents(concertID string, l Layout, n int) EventSource {
	sh := k.Concert(concertID).Placed(l.ShardAt).Shard(n)
	return EventSource{Stream: sh.Events(), DeadLetters: sh.DeadLetters(), ConcertID: concertID, Shard: n}
}

// ConcertSources is every event stream of a concert of layout l: the concert's, then each shard's of
// its line (none more for a line of one shard), then each seat slot's (Layout.Schedules).
func (k Keys) ConcertSources(concertID string, l Layout) []EventSource {
	out := []EventSource{k.ConcertEvents(concertID)}
	for n := 0; n < l.Shards && l.Shards > 1; n++ {
		out = append(out, k.LineEvents(concertID, l, n))
	}
	for _, slot := range l.Schedules {
		out = append(out, k.SeatEvents(concertID, slot))
	}
	return out
}

// AllEventStreams is EventStreams with the line shards' and seat slots' streams of each concert
// (ReadLayout).
func (k Keys) AllEventStreams(ctx context.Context, c rueidis.Client, concertIDs []string) ([]string, error) {
	out := k.EventStreams(nil)
	for _, id := range concertIDs {
		l, _, err := k.ReadLayout(ctx, c, id)
		if err != nil {
			return nil, err
		}
		for _, src := range k.ConcertSources(id, l) {
			out = append(out, src.Stream)
		}
	}
	return out, nil
}

// WalletEvents is the event stream of wallet shard n.
func (k Keys) WalletEvents(n int) EventSource {
	w := k.WalletShard(n)
	return EventSource{Stream: w.Events(), DeadLetters: w.DeadLetters(), Shard: n}
}

// EventSources is every event stream of the keys: the wallet shards', in shard order, then those of
// the given concerts.
func (k Keys) EventSources(concertIDs []string) []EventSource {
	out := make([]EventSource, 0, WalletShards+len(concertIDs))
	for n := range WalletShards {
		out = append(out, k.WalletEvents(n))
	}
	for _, id := range concertIDs {
		out = append(out, k.ConcertEvents(id))
	}
	return out
}

// EventStreams is the stream keys of EventSources.
func (k Keys) EventStreams(concertIDs []string) []string {
	srcs := k.EventSources(concertIDs)
	out := make([]string, len(srcs))
	for i, s := range srcs {
		out[i] = s.Stream
	}
	return out
}

// decodeError is an entry that is not an event the decoder knows: no retry can help.
type decodeError struct{ msg string }

func (e *decodeError) Error() string { return "decode: " + e.msg }

func bad(format string, args ...any) error { return &decodeError{msg: fmt.Sprintf(format, args...)} }

// fieldReader reads an entry's fields; the first missing or malformed one sticks in err.
type fieldReader struct {
	f   map[string]string
	err error
}

func (r *fieldReader) str(name string) string {
	v, ok := r.f[name]
	if (!ok || v == "") && r.err == nil {
		r.err = bad("field %q is missing", name)
	}
	return v
}

func (r *fieldReader) opt(name string) string { return r.f[name] }

func (r *fieldReader) int(name string) int64 {
	v := r.str(name)
	if r.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		// Lua may format a whole number as a float.
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || f != float64(int64(f)) {
			r.err = bad("field %q is not an integer: %q", name, v)
			return 0
		}
		n = int64(f)
	}
	return n
}

func (r *fieldReader) optInt(name string) int64 {
	if r.f[name] == "" {
		return 0
	}
	return r.int(name)
}

func (r *fieldReader) time(name string) time.Time {
	ms := r.int(name)
	if ms <= 0 && r.err == nil {
		r.err = bad("field %q is not a time: %q", name, r.f[name])
	}
	return time.UnixMilli(ms).UTC()
}

// eventKind is what the decoder makes of an event.
type eventKind uint8

const (
	queueEvent       eventKind = iota // changes no reservation: its id recorded, its seqs and ordinals raise the queue marks
	roundEvent                        // a queue event of an admission round: users and seqs, comma lists in the order taken
	reservationEvent                  // changes a reservation to its status
	codeEvent                         // an access code claimed
	ledgerEvent                       // a wallet's points moved: a ledger entry of its ledger type
	idempotencyEvent                  // an Idempotency-Key's record
)

// eventType is one event the scripts write (lua/*.lua, every XADD): the stream it goes to, its fields
// beside type, and what it records. Some fields the decoder records only as the event's time and type (a
// queue event's from, until or seen).
type eventType struct {
	wallet bool     // on a wallet shard's stream; otherwise a concert's (or a seat slot's, or a line shard's)
	fields []string // every field a script writes beside type
	kind   eventKind
	status ticketrush.ReservationStatus // reservationEvent: the status it leaves its reservation in
	ledger ticketrush.LedgerType        // ledgerEvent
}

// vocabulary is the event vocabulary: the one list the decoder, the write-behind and the tests read.
// TestScriptEventsAreKnown holds every XADD of the scripts to it, and TestDecoderKnowsTheListedEvents
// the decoder.
var vocabulary = map[string]eventType{
	"concert.load":     {fields: []string{"at"}},
	"concert.soldout":  {fields: []string{"sold", "at"}}, // the sale of the last seat: recorded in processed_batches with its time
	"queue.configure":  {fields: []string{"cap", "rate", "paused", "aps", "at"}},
	"queue.join":       {fields: []string{"user", "seq", "at"}},
	"queue.admit":      {fields: []string{"user", "seq", "until", "at"}},
	"queue.admits":     {fields: []string{"users", "seqs", "until", "at"}, kind: roundEvent},
	"queue.lapses":     {fields: []string{"users", "seqs", "at"}, kind: roundEvent},
	"queue.abandons":   {fields: []string{"users", "seqs", "seens", "at"}, kind: roundEvent},
	"queue.noshows":    {fields: []string{"users", "seqs", "at"}, kind: roundEvent},
	"queue.lapse":      {fields: []string{"user", "seq", "at"}},
	"queue.leave":      {fields: []string{"user", "seq", "from", "ord", "at"}},
	"queue.done":       {fields: []string{"user", "seq", "at"}},
	"queue.prequeue":   {fields: []string{"user", "at"}},
	"queue.unprequeue": {fields: []string{"user", "at"}},
	"draw.seal":        {fields: []string{"n", "base", "seq", "at"}},
	"draw.place":       {fields: []string{"from", "users", "at"}},
	"draw.done":        {fields: []string{"n", "digest", "seed", "at"}},
	"code.claim":       {fields: []string{"code", "user", "at"}, kind: codeEvent},
	"hold.create": {fields: []string{"res", "user", "schedule", "seat", "price", "expires", "seq", "at"},
		kind: reservationEvent, status: ticketrush.ReservationHeld},
	"hold.cancel": {fields: []string{"res", "user", "schedule", "seat", "at"},
		kind: reservationEvent, status: ticketrush.ReservationCancelled},
	"hold.lapse": {fields: []string{"res", "user", "schedule", "seat", "at"},
		kind: reservationEvent, status: ticketrush.ReservationExpired},
	"payment.claim":   {fields: []string{"res", "user", "at"}, kind: reservationEvent, status: ticketrush.ReservationPaying},
	"payment.release": {fields: []string{"res", "user", "at"}, kind: reservationEvent, status: ticketrush.ReservationHeld},
	"sale": {fields: []string{"res", "user", "schedule", "seat", "price", "payment", "at"},
		kind: reservationEvent, status: ticketrush.ReservationPaid},

	// idem and fp with an Idempotency-Key only
	"point.charge": {wallet: true, fields: []string{"id", "user", "amount", "balance", "at", "idem", "fp"},
		kind: ledgerEvent, ledger: ticketrush.LedgerCharge},
	"point.debit": {wallet: true, fields: []string{"id", "res", "user", "amount", "balance", "at"},
		kind: ledgerEvent, ledger: ticketrush.LedgerPayment},
	"point.refund": {wallet: true, fields: []string{"id", "res", "user", "amount", "balance", "at"},
		kind: ledgerEvent, ledger: ticketrush.LedgerRefund},
	// kind (charge) and refused with a refusal only
	"idem.remember": {wallet: true, fields: []string{"user", "key", "fp", "ref", "created", "at", "kind", "refused"},
		kind: idempotencyEvent},
}

// DecodeEvent adds what the entry id of src, with its fields, means to b. The shapes are those of the
// scripts' XADDs (lua/*.lua), listed in vocabulary. An error is an entry
// that is not an event the decoder knows: no retry can help.
func DecodeEvent(src EventSource, id string, fields map[string]string, b *ticketrush.RecordBatch) error {
	ev, err := ticketrush.ParseEventID(src.Stream, id)
	if err != nil {
		return bad("%v", err)
	}
	r := &fieldReader{f: fields}
	typ := r.str("type")
	if r.err != nil {
		return r.err
	}
	et, ok := vocabulary[typ]
	switch {
	case src.ConcertID != "" && (!ok || et.wallet):
		return bad("unknown concert event type %q", typ)
	case src.ConcertID == "" && (!ok || !et.wallet):
		return bad("unknown wallet event type %q", typ)
	case src.ConcertID != "":
		err = decodeConcert(src, ev, typ, et, r, b)
	default:
		err = decodeWallet(src, ev, typ, et, r, b)
	}
	if err != nil {
		return err
	}
	return r.err
}

func decodeConcert(src EventSource, ev ticketrush.EventID, typ string, et eventType, r *fieldReader, b *ticketrush.RecordBatch) error {
	switch et.kind {
	case reservationEvent:
		c := ticketrush.ReservationChange{Event: ev, Type: typ, Status: et.status, ID: r.str("res"), UserID: r.str("user"),
			At: r.time("at"), Price: -1}
		if r.err != nil {
			return r.err
		}
		concertID, scheduleID, ok := ticketrush.ParseReservationID(c.ID)
		if !ok || concertID != src.ConcertID {
			return bad("reservation id %q is not one of concert %s", c.ID, src.ConcertID)
		}
		if s := r.opt("schedule"); s != "" && s != scheduleID {
			return bad("reservation %s is of schedule %s, not %s", c.ID, scheduleID, s)
		}
		c.ConcertID, c.ScheduleID = concertID, scheduleID
		switch typ {
		case "hold.create":
			c.SeatID, c.Price, c.ExpiresAt, c.Seq = r.str("seat"), r.int("price"), r.time("expires"), uint64(r.optInt("seq"))
		case "hold.cancel", "hold.lapse":
			c.SeatID = r.str("seat")
		case "sale":
			c.SeatID, c.Price, c.PaymentID = r.str("seat"), r.int("price"), r.str("payment")
		}
		if c.Price < -1 {
			return bad("negative price %d", c.Price)
		}
		b.Reservations = append(b.Reservations, c)
		return nil
	case codeEvent:
		cl := ticketrush.CodeClaim{ConcertID: src.ConcertID, CodeHash: r.str("code"), UserID: r.str("user"), At: r.time("at")}
		if r.err != nil {
			return r.err
		}
		b.Processed = append(b.Processed, ticketrush.ProcessedEvent{Event: ev, Type: typ, At: cl.At})
		b.CodeClaims = append(b.CodeClaims, cl)
		return nil
	}
	b.Processed = append(b.Processed, ticketrush.ProcessedEvent{Event: ev, Type: typ, At: r.time("at")})
	seq, leave := r.optInt("seq"), r.optInt("ord")
	if et.kind == roundEvent {
		r.str("users")
		r.str("seqs")
		if r.err != nil {
			return r.err
		}
		fans, err := EventFans(r.f)
		if err != nil {
			return err
		}
		for _, f := range fans {
			seq = max(seq, int64(f.Seq))
		}
	}
	if seq > 0 || leave > 0 {
		b.QueueMarks = append(b.QueueMarks, ticketrush.QueueMark{ConcertID: src.ConcertID, MaxSeq: uint64(max(seq, 0)), MaxLeave: uint64(max(leave, 0))})
	}
	return decodeOnSale(src, ev, typ, r, b)
}

// EventFan is a fan a queue event names: the user and their arrival seq.
type EventFan struct {
	User string
	Seq  uint64
}

// EventFans returns the fans a queue event names, in the order written: the one of an event with user
// and seq (queue.admit, a join admitted at once), or the lists of a round's event (roundEvent: users
// and seqs, comma lists, one seq a user). Lists that do not pair up are an error.
func EventFans(fields map[string]string) ([]EventFan, error) {
	users, seqs := fields["users"], fields["seqs"]
	if users == "" && seqs == "" {
		if fields["user"] == "" {
			return nil, nil
		}
		users, seqs = fields["user"], fields["seq"]
	}
	us, ss := strings.Split(users, ","), strings.Split(seqs, ",")
	if len(us) != len(ss) {
		return nil, bad("%d users for %d seqs", len(us), len(ss))
	}
	out := make([]EventFan, len(us))
	for i, u := range us {
		n, err := strconv.ParseUint(ss[i], 10, 64)
		if err != nil || !ticketrush.ValidUserID(u) {
			return nil, bad("entry %d is not a user and a seq: %q, %q", i, u, ss[i])
		}
		out[i] = EventFan{User: u, Seq: n}
	}
	return out, nil
}

// decodeOnSale adds the on-sale's rows of the events queue.prequeue, draw.place and draw.done.
func decodeOnSale(src EventSource, ev ticketrush.EventID, typ string, r *fieldReader, b *ticketrush.RecordBatch) error {
	switch typ {
	case "queue.prequeue":
		b.Prequeue = append(b.Prequeue, ticketrush.PrequeueEntry{ConcertID: src.ConcertID, UserID: r.str("user"), At: r.time("at"), Event: ev})
	case "queue.unprequeue":
		b.PrequeueLeaves = append(b.PrequeueLeaves, ticketrush.PrequeueEntry{ConcertID: src.ConcertID, UserID: r.str("user"), At: r.time("at"), Event: ev})
	case "draw.place":
		from := r.int("from")
		users := r.opt("users")
		if r.err != nil || users == "" {
			return r.err
		}
		for i, u := range strings.Split(users, ",") {
			b.DrawPlaces = append(b.DrawPlaces, ticketrush.DrawPlace{ConcertID: src.ConcertID, Place: from + int64(i) + 1, UserID: u})
		}
	case "draw.done":
		seed, err := hex.DecodeString(r.str("seed"))
		if r.err == nil && (err != nil || len(seed) != 32) {
			return bad("draw.done seed is not 32 bytes of hex")
		}
		b.Draws = append(b.Draws, ticketrush.DrawRecord{ConcertID: src.ConcertID, Seed: seed, Entrants: r.int("n"),
			Digest: r.str("digest"), DrawnAt: r.time("at")})
	}
	return r.err
}

func decodeWallet(src EventSource, ev ticketrush.EventID, typ string, et eventType, r *fieldReader, b *ticketrush.RecordBatch) error {
	user := r.str("user")
	if r.err != nil {
		return r.err
	}
	if WalletShard(user) != src.Shard {
		return bad("user %q is not of wallet shard %d", user, src.Shard)
	}
	if et.kind == idempotencyEvent {
		kind := r.opt("kind")
		if kind == "" {
			kind = "payment"
		}
		if kind != "payment" && kind != "charge" {
			return bad("idem.remember of kind %q", kind)
		}
		rec := ticketrush.IdempotencyRecord{UserID: user, Key: r.str("key"), Kind: kind, Fingerprint: r.str("fp"),
			Ref: r.opt("ref"), Created: r.opt("created") == "1", Refused: r.opt("refused"), At: r.time("at")}
		if rec.Refused == "" && rec.Ref == "" {
			return bad("idem.remember of key %q with neither a ref nor a refusal", rec.Key)
		}
		b.Processed = append(b.Processed, ticketrush.ProcessedEvent{Event: ev, Type: typ, At: rec.At})
		b.Idempotency = append(b.Idempotency, rec)
		return nil
	}
	lt := et.ledger
	l := ticketrush.LedgerEntry{ID: r.str("id"), UserID: user, Type: lt, Amount: r.int("amount"),
		BalanceAfter: r.int("balance"), CreatedAt: r.time("at"), Event: ev}
	if lt != ticketrush.LedgerCharge {
		l.ReservationID = r.str("res")
	}
	if r.err != nil {
		return r.err
	}
	b.Ledger = append(b.Ledger, l)
	if key := r.opt("idem"); lt == ticketrush.LedgerCharge && key != "" {
		b.Idempotency = append(b.Idempotency, ticketrush.IdempotencyRecord{UserID: user, Key: key, Kind: "charge",
			Fingerprint: r.opt("fp"), Ref: l.ID, Created: true, At: l.CreatedAt})
	}
	return nil
}
