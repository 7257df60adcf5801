package http

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Booking is the purchase path.
type Booking interface {
	Schedules(ctx context.Context, userID, concertID, token string) ([]ticketrush.ScheduleAvailability, error)
	SeatMap(ctx context.Context, userID, concertID, scheduleID, token string) (*ticketrush.SeatMap, error)
	Hold(ctx context.Context, userID, token, scheduleID, seatID string) (ticketrush.Reservation, error)
	Reservation(ctx context.Context, userID, id string) (ticketrush.Reservation, error)
	Cancel(ctx context.Context, userID, id string) error
	Balance(ctx context.Context, userID string) (int64, error)
	Charge(ctx context.Context, userID string, amount int64, idemKey string) (ticketrush.Charge, bool, error)
	PayOnce(ctx context.Context, userID, resID, idemKey string) (ticketrush.Payment, bool, error)
	Payment(ctx context.Context, userID, id string) (ticketrush.Payment, error)
}

func (s *Server) bookingRoutes() {
	s.handle("GET", "/v1/concerts/:concertId/schedules", s.listSchedules)
	s.handle("GET", "/v1/concerts/:concertId/schedules/:scheduleId/seats", s.listSeats)
	s.handle("POST", "/v1/reservations", s.hold)
	s.handle("GET", "/v1/reservations/:id", s.getReservation)
	s.handle("DELETE", "/v1/reservations/:id", s.cancelReservation)
	s.handle("GET", "/v1/points", s.balance)
	s.handle("POST", "/v1/points/charges", s.charge)
	s.handle("POST", "/v1/payments", s.pay)
	s.handle("GET", "/v1/payments/:id", s.getPayment)
}

type scheduleJSONAvailability struct {
	ID             string    `json:"id"`
	StartsAt       time.Time `json:"startsAt"`
	AvailableSeats int64     `json:"availableSeats"`
	TotalSeats     int64     `json:"totalSeats"`
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	user, id, err := s.userAndConcert(r, p)
	if err != nil {
		return err
	}
	list, err := s.Booking.Schedules(r.Context(), user, id, r.Header.Get("X-Queue-Token"))
	if err != nil {
		return err
	}
	out := make([]scheduleJSONAvailability, len(list))
	for i, sc := range list {
		out[i] = scheduleJSONAvailability{ID: sc.ID, StartsAt: sc.StartsAt.UTC(), AvailableSeats: sc.Available, TotalSeats: sc.Total}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) listSeats(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	user, id, err := s.userAndConcert(r, p)
	if err != nil {
		return err
	}
	m, err := s.Booking.SeatMap(r.Context(), user, id, p.ByName("scheduleId"), r.Header.Get("X-Queue-Token"))
	if err != nil {
		return err
	}
	// The token was checked for this request; the bytes are the map's, encoded once for every reader.
	enc := m.Encoded(encodeSeatMap).(*seatMapBytes)
	if acceptsGzip(r) {
		serveBytes(w, r, "application/json", enc.gzipped(), true, enc.etagGz)
	} else {
		serveBytes(w, r, "application/json", enc.body, false, enc.etag)
	}
	return nil
}

// seatMapBytes is a seat map as the API sends it: its JSON, the same gzipped (made by the first reader
// that accepts gzip), and the ETag of each (the gzip's adds -gz: each encoding its own validator, as the
// pages).
type seatMapBytes struct {
	body         []byte
	etag, etagGz string
	gz           struct {
		once sync.Once
		body []byte
	}
}

func (b *seatMapBytes) gzipped() []byte {
	b.gz.once.Do(func() { b.gz.body = gzipped(b.body, gzip.BestSpeed) })
	return b.gz.body
}

func encodeSeatMap(m *ticketrush.SeatMap) any {
	body := seatsJSON(m.Seats)
	etag, etagGz := etags(body, 12)
	return &seatMapBytes{body: body, etag: etag, etagGz: etagGz}
}

// seatsJSON is a seat map's JSON. A seat map (up to 200,000 seats a schedule,
// ticketrush.MaxSeatsPerSchedule) is the largest response of the API: written by hand, one buffer, no
// reflection.
func seatsJSON(seats []ticketrush.Seat) []byte {
	b := make([]byte, 0, len(seats)*72)
	b = append(b, '[')
	for i, seat := range seats {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, seat.ID)
		b = append(b, `,"section":`...)
		b = appendString(b, seat.Section)
		b = append(b, `,"price":`...)
		b = strconv.AppendInt(b, seat.Price, 10)
		b = append(b, `,"status":"`...)
		b = append(b, seat.Status...)
		b = append(b, `"}`...)
	}
	return append(b, "]\n"...)
}

// noneMatch reports whether If-None-Match (its field lines) names etag, by weak comparison (RFC 9110
// 13.1.2), or is "*".
func noneMatch(fields []string, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	for _, f := range fields {
		for _, tag := range strings.Split(f, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == want {
				return true
			}
		}
	}
	return false
}

// appendString appends s as a JSON string (appendJSONString, or encoding/json's for a string it
// declines); seat ids and section names are [A-Za-z0-9_-], so the fallback only guards against a
// future change.
func appendString(b []byte, s string) []byte {
	if out, ok := appendJSONString(b, s); ok {
		return out
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

type reservationJSON struct {
	ID         string    `json:"id"`
	Status     string    `json:"status"`
	ConcertID  string    `json:"concertId"`
	ScheduleID string    `json:"scheduleId"`
	SeatID     string    `json:"seatId"`
	Price      int64     `json:"price"`
	ExpiresAt  time.Time `json:"expiresAt"`
	CreatedAt  time.Time `json:"createdAt"`
}

func toReservationJSON(res ticketrush.Reservation, now time.Time) reservationJSON {
	return reservationJSON{ID: res.ID, Status: string(res.PublicStatus(now)), ConcertID: res.ConcertID,
		ScheduleID: res.ScheduleID, SeatID: res.SeatID, Price: res.Price,
		ExpiresAt: res.ExpiresAt.UTC(), CreatedAt: res.CreatedAt.UTC()}
}

type holdRequest struct {
	ScheduleID string `json:"scheduleId"`
	SeatID     string `json:"seatId"`
}

func (s *Server) hold(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	var req holdRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.ScheduleID == "" || req.SeatID == "" {
		return ticketrush.Invalidf("scheduleId and seatId are required")
	}
	res, err := s.Booking.Hold(r.Context(), user, r.Header.Get("X-Queue-Token"), req.ScheduleID, req.SeatID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toReservationJSON(res, res.CreatedAt))
	return nil
}

func (s *Server) getReservation(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	res, err := s.Booking.Reservation(r.Context(), user, p.ByName("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toReservationJSON(res, time.Now()))
	return nil
}

func (s *Server) cancelReservation(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	if err := noBody(w, r); err != nil {
		return err
	}
	if err := s.Booking.Cancel(r.Context(), user, p.ByName("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) balance(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	b, err := s.Booking.Balance(r.Context(), user)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int64{"balance": b})
	return nil
}

type chargeRequest struct {
	Amount json.RawMessage `json:"amount"`
}

type chargeJSON struct {
	ID        string    `json:"id"`
	Amount    int64     `json:"amount"`
	Balance   int64     `json:"balance"`
	CreatedAt time.Time `json:"createdAt"`
}

func (s *Server) charge(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req chargeRequest
	user, key, err := s.moneyRequest(w, r, &req)
	if err != nil {
		return err
	}
	// The amount must be a JSON integer literal: 1.5, "100", 1e3 and null are INVALID_AMOUNT.
	amount, err := strconv.ParseInt(string(req.Amount), 10, 64)
	if err != nil {
		return ticketrush.ErrInvalidAmount
	}
	c, _, err := s.Booking.Charge(r.Context(), user, amount, key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, chargeJSON{ID: c.ID, Amount: c.Amount, Balance: c.Balance, CreatedAt: c.CreatedAt.UTC()})
	return nil
}

type payRequest struct {
	ReservationID string `json:"reservationId"`
}

type paymentJSON struct {
	ID            string    `json:"id"`
	ReservationID string    `json:"reservationId"`
	Amount        int64     `json:"amount"`
	Balance       int64     `json:"balance"`
	PaidAt        time.Time `json:"paidAt"`
}

func toPaymentJSON(p ticketrush.Payment) paymentJSON {
	return paymentJSON{ID: p.ID, ReservationID: p.ReservationID, Amount: p.Amount, Balance: p.Balance, PaidAt: p.PaidAt.UTC()}
}

func (s *Server) pay(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req payRequest
	user, key, err := s.moneyRequest(w, r, &req)
	if err != nil {
		return err
	}
	if req.ReservationID == "" {
		return ticketrush.Invalidf("reservationId is required")
	}
	p, created, err := s.Booking.PayOnce(r.Context(), user, req.ReservationID, key)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toPaymentJSON(p))
	return nil
}

func (s *Server) getPayment(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	pay, err := s.Booking.Payment(r.Context(), user, p.ByName("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPaymentJSON(pay))
	return nil
}

// moneyRequest reads what the two money endpoints take: the user, the optional Idempotency-Key and the
// JSON body into v.
func (s *Server) moneyRequest(w http.ResponseWriter, r *http.Request, v any) (user, key string, err error) {
	if user, err = s.user(r); err != nil {
		return "", "", err
	}
	if key, err = idempotencyKey(r); err != nil {
		return "", "", err
	}
	return user, key, decode(w, r, v)
}

// maxIdempotencyKey is the longest Idempotency-Key taken.
const maxIdempotencyKey = 64

// idempotencyKey reads the optional Idempotency-Key: absent, or 1-64 printable ASCII characters
// (0x20-0x7e, the space included; net/http has trimmed the value's ends). A header sent empty is
// refused, not read as no key: its retry would act again, where the client meant it not to.
func idempotencyKey(r *http.Request) (string, error) {
	key := r.Header.Get("Idempotency-Key")
	if (key == "" && len(r.Header.Values("Idempotency-Key")) > 0) || len(key) > maxIdempotencyKey {
		return "", ticketrush.Invalidf("Idempotency-Key must be 1-%d printable characters", maxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", ticketrush.Invalidf("Idempotency-Key must be 1-%d printable characters", maxIdempotencyKey)
		}
	}
	return key, nil
}
