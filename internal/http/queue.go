package http

import (
	"net/http"
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
	EstimatedWaitSeconds *int64     `json:"estimatedWaitSeconds"` // null while paused and WAITING: unknown
	PollAfterSeconds     int64      `json:"pollAfterSeconds"`
	ActiveUntil          *time.Time `json:"activeUntil"`
	Paused               bool       `json:"paused"`
	SeatsAvailable       int64      `json:"seatsAvailable"`
}

func toTicketJSON(t ticketrush.Ticket) ticketJSON {
	out := ticketJSON{
		Token: t.Token, ConcertID: t.ConcertID, Status: string(t.Status), Position: t.Position,
		PollAfterSeconds: int64(t.PollAfter / time.Second), Paused: t.Paused, SeatsAvailable: t.SeatsAvailable,
	}
	if !(t.Paused && t.Status == ticketrush.StatusWaiting) {
		wait := int64(t.EstimatedWait / time.Second)
		out.EstimatedWaitSeconds = &wait
	}
	if !t.ActiveUntil.IsZero() {
		u := t.ActiveUntil.UTC()
		out.ActiveUntil = &u
	}
	return out
}

func (s *Server) joinQueue(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	user, id, err := s.userAndConcert(r, p)
	if err != nil {
		return err
	}
	if _, ok := s.Catalog.Concert(id); !ok {
		return ticketrush.ErrNotFound
	}
	t, created, err := s.Queue.Join(r.Context(), user, id)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toTicketJSON(t))
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
	writeJSON(w, http.StatusOK, toTicketJSON(t))
	return nil
}

func (s *Server) leaveQueue(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	if err := s.Queue.Leave(r.Context(), user, r.Header.Get("X-Queue-Token")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
