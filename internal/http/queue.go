package http

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

type concertJSON struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Venue string `json:"venue"`
}

func (s *Server) listConcerts(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	list := s.Catalog.List()
	out := make([]concertJSON, 0, len(list))
	for _, c := range list {
		out = append(out, concertJSON{ID: c.ID, Title: c.Title, Venue: c.Venue})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type ticketJSON struct {
	Token                string     `json:"token"`
	ConcertID            string     `json:"concertId"`
	Status               string     `json:"status"`
	Position             int64      `json:"position"`
	EstimatedWaitSeconds int64      `json:"estimatedWaitSeconds"`
	PollAfterSeconds     int64      `json:"pollAfterSeconds"`
	ActiveUntil          *time.Time `json:"activeUntil"`
	Paused               bool       `json:"paused"`
	OpensAt              *time.Time `json:"opensAt"`
	DrawKey              *string    `json:"drawKey"`
	SeatsAvailable       int64      `json:"seatsAvailable"`
	Pass                 *string    `json:"pass"`
}

func toTicketJSON(t ticketrush.Ticket) ticketJSON {
	out := ticketJSON{
		Token: t.Token, ConcertID: t.ConcertID, Status: string(t.Status), Position: t.Position,
		EstimatedWaitSeconds: int64(t.EstimatedWait / time.Second),
		PollAfterSeconds:     int64(t.PollAfter / time.Second), Paused: t.Paused, SeatsAvailable: t.SeatsAvailable,
	}
	out.ActiveUntil, out.OpensAt = utcOrNil(t.ActiveUntil), utcOrNil(t.OpensAt)
	if t.DrawKey != "" {
		k := t.DrawKey
		out.DrawKey = &k
	}
	return out
}

// ticketJSON is t's queue body for user: with an admission pass while t is ACTIVE, signed afresh on
// each answer (docs/pass.md, "Cost"); no other status signs anything.
func (s *Server) ticketJSON(user string, t ticketrush.Ticket) (ticketJSON, error) {
	out := toTicketJSON(t)
	if t.Status != ticketrush.StatusActive || s.Passes == nil {
		return out, nil
	}
	p, err := s.Passes.Sign(user, t.ConcertID, t.ActiveUntil)
	if err != nil {
		return ticketJSON{}, fmt.Errorf("sign pass: %w", err)
	}
	out.Pass = &p
	return out, nil
}

// keySet is GET /.well-known/jwks.json: the public keys that verify every admission pass not yet
// expired, cacheable for as long as docs/pass.md's schedule allows.
func (s *Server) keySet(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	if s.Passes == nil {
		return ticketrush.ErrNotFound
	}
	jwks, maxAge := s.Passes.KeySet()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(maxAge/time.Second)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(jwks)
	return err
}

// site is GET /site.json, what the fan page needs of the deployment: passSite, the site it sends an
// admitted fan on to with their pass (docs/pass.md, "The fan page"), or null.
func (s *Server) site(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	var site *string
	if s.PassSite != "" {
		site = &s.PassSite
	}
	w.Header().Set("Cache-Control", "public, max-age=60")
	writeJSON(w, http.StatusOK, struct {
		PassSite *string `json:"passSite"`
	}{site})
	return nil
}

// utcOrNil is an optional time of a reply: nil (null) when unset, else in UTC.
func utcOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func (s *Server) joinQueue(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	user, id, err := s.userAndConcert(r, p)
	if err != nil {
		return err
	}
	c, ok := s.Catalog.Concert(id)
	if !ok {
		return ticketrush.ErrNotFound
	}
	pass, err := s.joinPass(w, r, user, id)
	if err != nil {
		return err
	}
	t, created, err := s.Queue.JoinWith(r.Context(), user, id, pass)
	if errors.Is(err, ticketrush.ErrSaleNotOpen) && c.Sale != nil {
		return &ticketrush.SaleNotOpenError{OpensAt: c.Sale.OpensAt, PrequeueOpensAt: c.Sale.PrequeueOpensAt}
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	body, err := s.ticketJSON(user, t)
	if err != nil {
		return err
	}
	writeJSON(w, status, body)
	return nil
}

func (s *Server) queueStatus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	t, err := s.Queue.Status(r.Context(), user, r.Header.Get("X-Queue-Token"))
	if err != nil {
		return err
	}
	body, err := s.ticketJSON(user, t)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) leaveQueue(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	if err := noBody(w, r); err != nil {
		return err
	}
	if err := s.Queue.Leave(r.Context(), user, r.Header.Get("X-Queue-Token")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// joinRequest is the join's optional body (docs/api.md Abuse).
type joinRequest struct {
	AccessCode *string `json:"accessCode"`
	Challenge  *string `json:"challenge"`
	Nonce      *string `json:"nonce"`
}

// joinPass reads the join's optional body into what the join script checks: the proof of work checked
// here (signature, binding, expiry, work: no Redis), the access code hashed. Whether the concert asks
// for either, and single use, are the script's.
func (s *Server) joinPass(w http.ResponseWriter, r *http.Request, user, concertID string) (ticketrush.JoinPass, error) {
	var req joinRequest
	if given, err := optionalBody(w, r, &req); err != nil || !given {
		return ticketrush.JoinPass{}, err // no body: the join of docs/api.md v1
	}
	var pass ticketrush.JoinPass
	if req.Challenge != nil || req.Nonce != nil {
		if s.Challenges == nil {
			pass.PowInvalid = true
		} else {
			pass = s.Challenges.Pass(deref(req.Challenge), deref(req.Nonce), user, concertID, time.Now())
			if pass == (ticketrush.JoinPass{}) {
				pass.PowInvalid = true // an empty challenge and nonce are no proof
			}
		}
	}
	if req.AccessCode != nil {
		pass.CodeHash = ticketrush.HashAccessCode(*req.AccessCode)
		if pass.CodeHash == "" {
			pass.CodeHash = "-" // not a code of ours: unknown to the script
		}
	}
	return pass, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

type challengeJSON struct {
	Challenge string    `json:"challenge"`
	Bits      int       `json:"bits"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// queueChallenge issues a proof-of-work challenge for the caller and concert, at the concert's current
// difficulty.
func (s *Server) queueChallenge(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	user, id, err := s.userAndConcert(r, p)
	if err != nil {
		return err
	}
	if err := noBody(w, r); err != nil {
		return err
	}
	c, ok := s.Catalog.Concert(id)
	if !ok {
		return ticketrush.ErrNotFound
	}
	if s.Challenges == nil {
		return ticketrush.ErrUnavailable
	}
	ch, expires := s.Challenges.Issue(user, id, c.Queue.JoinPowBits, time.Now())
	writeJSON(w, http.StatusCreated, challengeJSON{Challenge: ch, Bits: c.Queue.JoinPowBits, ExpiresAt: expires.UTC()})
	return nil
}
