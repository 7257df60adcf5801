package redis

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/flatjson"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The data layout: how each stored record is encoded, one Go type per record, for the scripts' callers
// and for this package's direct reads and writes of the state: the tools that need them (restore,
// reconcile, the load-test checker) go through those (repair.go, inspect.go), never the encodings. The
// key names are in keys.go; the scripts in lua/ write the same encodings.

// jsonInt reads a JSON number that Lua may have written in float notation.
type jsonInt int64

func (j *jsonInt) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*j = jsonInt(f)
	return nil
}

// reservationRecord is a reservation in the concert's res hash (cjson; times in Unix ms). The payment
// fields are there once it is PAID.
type reservationRecord struct {
	ID        string   `json:"id"`
	User      string   `json:"user"`
	Seq       jsonInt  `json:"seq"`
	Schedule  string   `json:"schedule"`
	Seat      string   `json:"seat"`
	Price     jsonInt  `json:"price"`
	Status    string   `json:"status"`
	ExpiresAt jsonInt  `json:"expiresAt"`
	CreatedAt jsonInt  `json:"createdAt"`
	Payment   string   `json:"payment,omitempty"`
	PaidAt    jsonInt  `json:"paidAt,omitempty"`
	Balance   *jsonInt `json:"balance,omitempty"`
}

// scanReservation reads raw as flatjson.Fields can (the layout the scripts write); ok is false when
// it cannot.
func scanReservation(raw string) (r reservationRecord, ok bool) {
	ok = flatjson.Fields(raw, func(key, v string, q bool) (ok bool) {
		switch key {
		case "id":
			r.ID, ok = v, q
		case "user":
			r.User, ok = v, q
		case "seq":
			r.Seq, ok = flatInt(v, q)
		case "schedule":
			r.Schedule, ok = v, q
		case "seat":
			r.Seat, ok = v, q
		case "price":
			r.Price, ok = flatInt(v, q)
		case "status":
			r.Status, ok = v, q
		case "expiresAt":
			r.ExpiresAt, ok = flatInt(v, q)
		case "createdAt":
			r.CreatedAt, ok = flatInt(v, q)
		case "payment":
			r.Payment, ok = v, q
		case "paidAt":
			r.PaidAt, ok = flatInt(v, q)
		case "balance":
			var b jsonInt
			b, ok = flatInt(v, q)
			r.Balance = &b
		}
		return ok
	})
	return r, ok
}

// decodeReservation reads a reservation record of concertID's res hash.
func decodeReservation(concertID, raw string) (ticketrush.Reservation, error) {
	r, err := decodeRecord(raw, scanReservation)
	if err != nil {
		return ticketrush.Reservation{}, fmt.Errorf("decode reservation: %w", err)
	}
	var balance int64
	if r.Balance != nil {
		balance = int64(*r.Balance)
	}
	return ticketrush.Reservation{
		ID: r.ID, UserID: r.User, ConcertID: concertID, ScheduleID: r.Schedule, SeatID: r.Seat, Seq: uint64(r.Seq),
		Price: int64(r.Price), Status: ticketrush.ReservationStatus(r.Status),
		ExpiresAt: fromMillis(int64(r.ExpiresAt)), CreatedAt: fromMillis(int64(r.CreatedAt)),
		PaymentID: r.Payment, PaidAt: fromMillis(int64(r.PaidAt)), Balance: balance,
	}, nil
}

// encodeReservation writes a reservation record as the scripts keep it (the payment fields for a PAID
// one only).
func encodeReservation(r ticketrush.Reservation) (string, error) {
	rec := reservationRecord{ID: r.ID, User: r.UserID, Seq: jsonInt(r.Seq), Schedule: r.ScheduleID, Seat: r.SeatID,
		Price: jsonInt(r.Price), Status: string(r.Status), ExpiresAt: jsonInt(msOf(r.ExpiresAt)),
		CreatedAt: jsonInt(msOf(r.CreatedAt))}
	if r.Status == ticketrush.ReservationPaid {
		bal := jsonInt(r.Balance)
		rec.Payment, rec.PaidAt, rec.Balance = r.PaymentID, jsonInt(msOf(r.PaidAt)), &bal
	}
	raw, err := json.Marshal(rec)
	return string(raw), err
}

// movementRecord is a debit or a refund in a wallet shard's debits or refunds hash, keyed by
// reservation id.
type movementRecord struct {
	ID      string  `json:"id"`
	User    string  `json:"user"`
	Amount  jsonInt `json:"amount"`
	Balance jsonInt `json:"balance"`
	At      jsonInt `json:"at"`
}

// scanMovement reads raw as flatjson.Fields can; ok is false when it cannot.
func scanMovement(raw string) (d movementRecord, ok bool) {
	ok = flatjson.Fields(raw, func(key, v string, q bool) (ok bool) {
		switch key {
		case "id":
			d.ID, ok = v, q
		case "user":
			d.User, ok = v, q
		case "amount":
			d.Amount, ok = flatInt(v, q)
		case "balance":
			d.Balance, ok = flatInt(v, q)
		case "at":
			d.At, ok = flatInt(v, q)
		}
		return ok
	})
	return d, ok
}

// decodeMovement reads a debit or refund record of reservation resID.
func decodeMovement(resID, raw string) (ticketrush.Payment, error) {
	d, err := decodeRecord(raw, scanMovement)
	if err != nil {
		return ticketrush.Payment{}, fmt.Errorf("decode debit: %w", err)
	}
	return ticketrush.Payment{ID: d.ID, ReservationID: resID, UserID: d.User, Amount: int64(d.Amount),
		Balance: int64(d.Balance), PaidAt: fromMillis(int64(d.At))}, nil
}

// encodeMovement writes a ledger entry (a payment or a refund) as the wallet scripts keep it.
func encodeMovement(e ticketrush.LedgerEntry) (string, error) {
	raw, err := json.Marshal(movementRecord{ID: e.ID, User: e.UserID, Amount: jsonInt(e.Amount),
		Balance: jsonInt(e.BalanceAfter), At: jsonInt(msOf(e.CreatedAt))})
	return string(raw), err
}

// idempotencyRecord is the record of one user's Idempotency-Key (string key, with a TTL). A key first
// used on a charge keeps the charge (id, amount, balance, at: points_charge replays it); one first used
// on a payment keeps the payment id (ref) and whether the first answer was a creation; pending while
// that payment is under way. A key whose first answer was a refusal keeps only its code (refused).
type idempotencyRecord struct {
	Fingerprint string  `json:"fingerprint"`
	ID          string  `json:"id,omitempty"`
	Amount      jsonInt `json:"amount,omitempty"`
	Balance     jsonInt `json:"balance,omitempty"`
	At          jsonInt `json:"at,omitempty"`
	Ref         string  `json:"ref,omitempty"`
	Created     bool    `json:"created,omitempty"`
	Pending     bool    `json:"pending,omitempty"` // a payment under way holds the key (payment_remember 'reserve')
	Refused     string  `json:"refused,omitempty"` // the code of the refusal that answered the request
}

// scanIdempotency reads raw as flatjson.Fields can; ok is false when it cannot.
func scanIdempotency(raw string) (rec idempotencyRecord, ok bool) {
	ok = flatjson.Fields(raw, func(key, v string, q bool) (ok bool) {
		switch key {
		case "fingerprint":
			rec.Fingerprint, ok = v, q
		case "id":
			rec.ID, ok = v, q
		case "amount":
			rec.Amount, ok = flatInt(v, q)
		case "balance":
			rec.Balance, ok = flatInt(v, q)
		case "at":
			rec.At, ok = flatInt(v, q)
		case "ref":
			rec.Ref, ok = v, q
		case "created":
			rec.Created, ok = flatjson.Bool(v, q)
		case "pending":
			rec.Pending, ok = flatjson.Bool(v, q)
		case "refused":
			rec.Refused, ok = v, q
		}
		return ok
	})
	return rec, ok
}

// decodeIdempotency reads the record of an Idempotency-Key.
func decodeIdempotency(raw string) (idempotencyRecord, error) {
	rec, err := decodeRecord(raw, scanIdempotency)
	if err != nil {
		return idempotencyRecord{}, fmt.Errorf("decode idempotency record: %w", err)
	}
	return rec, nil
}

// encodeIdempotency writes the record of an Idempotency-Key as points_charge and payment_remember keep
// it.
func encodeIdempotency(r ticketrush.IdempotencyRecord) (string, error) {
	rec := idempotencyRecord{Fingerprint: r.Fingerprint}
	if r.Refused != "" {
		rec.Refused = r.Refused
	} else if r.Kind == "charge" {
		rec.ID, rec.Amount, rec.Balance, rec.At = r.Ref, jsonInt(r.Amount), jsonInt(r.Balance), jsonInt(msOf(r.At))
	} else {
		rec.Ref, rec.Created = r.Ref, r.Created
	}
	raw, err := json.Marshal(rec)
	return string(raw), err
}

// SeatKind is the first letter of a seat state.
type SeatKind byte

// The seat states of a schedule's seats hash; a seat not in the hash is available.
const (
	SeatHeld   SeatKind = 'H' // H|<res>|<expires ms>
	SeatPaying SeatKind = 'P' // P|<res>
	SeatSold   SeatKind = 'S' // S|<res>
)

// SeatState is one seat's entry in a schedule's seats hash.
type SeatState struct {
	Kind        SeatKind
	Reservation string
	Expires     int64 // Unix ms, for a hold
}

// String encodes the state as the scripts write it.
func (s SeatState) String() string {
	if s.Kind == SeatHeld {
		return "H|" + s.Reservation + "|" + strconv.FormatInt(s.Expires, 10)
	}
	return string(s.Kind) + "|" + s.Reservation
}

// parseSeatState reads a seat state; ok is false for anything else. A hold without a readable expiry
// never lapses.
func parseSeatState(v string) (s SeatState, ok bool) {
	if len(v) < 2 || v[1] != '|' {
		return SeatState{}, false
	}
	s.Kind, s.Reservation = SeatKind(v[0]), v[2:]
	switch s.Kind {
	case SeatPaying, SeatSold:
		return s, true
	case SeatHeld:
		s.Expires = math.MaxInt64
		if i := strings.LastIndexByte(s.Reservation, '|'); i >= 0 {
			if exp, err := strconv.ParseInt(s.Reservation[i+1:], 10, 64); err == nil {
				s.Expires = exp
			}
			s.Reservation = s.Reservation[:i]
		}
		return s, true
	}
	return SeatState{}, false
}

// concertHashes returns a concert's meta and cfg hashes as concert_load writes them, with its seat slots
// at sched (its placement: PlaceSeatSlots, recorded with the concert).
func concertHashes(c ticketrush.Concert, sched string) (meta, cfg map[string]string) {
	q := c.Queue
	meta = map[string]string{"title": c.Title, "venue": c.Venue}
	cfg = map[string]string{"cap": itoa(q.ActiveCapacity), "rate": itoa(q.AdmitPerSecond), "ttl": ms(q.ActiveTTL),
		"hold": ms(q.HoldTTL), "maxholds": itoa(q.MaxHoldsPerUser), "paused": flag(q.Paused),
		"pow": itoa(q.JoinPowBits), "codereq": flag(q.AccessCodeRequired), "aps": itoa(q.ActivePerSeat),
		"abandon": ms(q.AbandonAfter), "noshow": ms(q.NoShow), "shards": itoa(max(1, q.LineShards)),
		"lv": itoa(LayoutVersion)}
	if sched != "" {
		cfg["sched"] = sched
	}
	return meta, cfg
}

// Inventory is a concert's seat count as the seat scripts keep it in the inv hash: seats of every
// schedule, those AVAILABLE (in no seat map: neither held, being paid nor sold; a hold past its expiry
// that the sweeper has not lapsed yet is counted taken here and added back by the readers), those
// SOLD, and whether the concert is sold out.
type Inventory struct {
	Seats, Available, Sold int64
	SoldOut                bool
}

// inventoryHash encodes a concert's inv hash as the scripts keep it.
func inventoryHash(inv Inventory) map[string]string {
	return map[string]string{"seats": i64toa(inv.Seats), "avail": i64toa(inv.Available), "sold": i64toa(inv.Sold),
		"soldout": flag(inv.SoldOut)}
}

// decodeInventory reads a concert's inv hash (HGETALL); ok is false when it is absent or malformed.
func decodeInventory(h map[string]string) (inv Inventory, ok bool) {
	var errs [3]error
	inv.Seats, errs[0] = strconv.ParseInt(h["seats"], 10, 64)
	inv.Available, errs[1] = strconv.ParseInt(h["avail"], 10, 64)
	inv.Sold, errs[2] = strconv.ParseInt(h["sold"], 10, 64)
	inv.SoldOut = h["soldout"] == "1"
	return inv, errs[0] == nil && errs[1] == nil && errs[2] == nil
}

// msOf is t in Unix ms, 0 for the zero time.
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// saleHashes returns the fields concert_load adds for a concert with a sale: cfg's opens and pqopens,
// and the draw hash's seed (hex, secret until the draw). Both are empty without a sale.
func saleHashes(c ticketrush.Concert) (cfg, draw map[string]string) {
	if c.Sale == nil {
		return nil, nil
	}
	return map[string]string{"opens": saleOpens(c.Sale), "pqopens": salePrequeueOpens(c.Sale)},
		map[string]string{"seed": saleSeed(c.Sale)}
}

// drawnHash is the draw hash of a completed draw as draw_place leaves it (base 0: restore restarts the
// line empty, above every arrival ever issued), without its seed (saleHashes).
func drawnHash(entrants int64, digest string, drawnAt time.Time) map[string]string {
	n := strconv.FormatInt(entrants, 10)
	return map[string]string{"sealed": "1", "base": "0", "n": n, "placed": n, "digest": digest,
		"drawnAt": strconv.FormatInt(msOf(drawnAt), 10)}
}

// drawKeysValue is the dkeys string of a draw: every key's raw bytes in draw order.
func drawKeysValue(order []draw.Entrant) string {
	b := make([]byte, 0, len(order)*draw.KeySize)
	for _, e := range order {
		b = append(b, e.Key[:]...)
	}
	return string(b)
}

// LayoutVersion is the version of the Redis layout this build reads and writes (docs/operations.md,
// "Layout versions"). Version 2: a line is a hash of places and lists in arrival order (not a sorted
// set), and a line of one slot keeps its liveness in seen (not a hash). Version 3: every schedule's seats
// are in a seat slot of their own (a line of one shard: in the concert's own slot), none in the concert's
// keys. Version 4: a line over shards keeps its fans' gate records (ugate) in their shards, beside the
// tokens its rounds leave there, not in the concert's slot. Concerts below it are migrated once
// (MigrateLayout), at a process's start or by `ticketrush migrate-layout`; the scripts read version 4
// alone.
const LayoutVersion = 4
