package http

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Draws reads a concert's draw for the public endpoints.
type Draws interface {
	DrawState(ctx context.Context, concertID string) (ticketrush.DrawState, error)
	// WriteDrawKeys writes the keys file to w, each of its reads of Redis bounded by call.
	WriteDrawKeys(ctx context.Context, concertID string, n int64, call time.Duration, w io.Writer) error
}

// drawJSON is the public draw of docs/api.md's On-sale; fields not yet known are null. seed is set only
// once the draw is done.
type drawJSON struct {
	ConcertID       string     `json:"concertId"`
	Status          string     `json:"status"`
	PrequeueOpensAt time.Time  `json:"prequeueOpensAt"`
	OpensAt         time.Time  `json:"opensAt"`
	Commitment      *string    `json:"commitment"`
	Seed            *string    `json:"seed"`
	Entrants        *int64     `json:"entrants"`
	EntrantsDigest  *string    `json:"entrantsDigest"`
	DrawnAt         *time.Time `json:"drawnAt"`
}

// saleOf returns the route's concert and its sale; 404 for a concert without one.
func (s *Server) saleOf(p httprouter.Params) (string, ticketrush.Sale, error) {
	id, err := concertID(p)
	if err != nil {
		return "", ticketrush.Sale{}, err
	}
	c, ok := s.Catalog.Concert(id)
	if !ok || c.Sale == nil {
		return "", ticketrush.Sale{}, ticketrush.WithDetail(ticketrush.ErrNotFound, "no such concert, or it has no sale")
	}
	return id, *c.Sale, nil
}

func (s *Server) getDraw(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, sale, err := s.saleOf(p)
	if err != nil {
		return err
	}
	out := drawJSON{ConcertID: id, Status: string(ticketrush.DrawPending), PrequeueOpensAt: sale.PrequeueOpensAt.UTC(),
		OpensAt: sale.OpensAt.UTC()}
	if time.Now().Before(sale.PrequeueOpensAt) {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	seed := draw.Seed(sale.Seed)
	commitment := seed.Commitment()
	out.Status, out.Commitment = string(ticketrush.DrawOpen), &commitment
	st, err := s.Draws.DrawState(r.Context(), id)
	if err != nil {
		return err
	}
	if st.Drawn() {
		// Only now does the seed leave the service.
		h, n, digest, at := hex.EncodeToString(sale.Seed[:]), st.Entrants, st.Digest, st.DrawnAt.UTC()
		out.Status, out.Seed, out.Entrants, out.EntrantsDigest, out.DrawnAt = string(ticketrush.DrawDrawn), &h, &n, &digest, &at
		w.Header().Set("Cache-Control", "public, max-age=300")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getDrawKeys streams the keys file: every entrant's key in draw order, one hex line each. It never
// changes once drawn, so it is cacheable for good, with the digest as its ETag. The request has no
// deadline of its own (handleStream): a million entrants' file is 65 MB, which a fan's connection may
// take minutes to carry. Each read of Redis is bounded by the request timeout, each write by
// streamWriteTimeout.
func (s *Server) getDrawKeys(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, _, err := s.saleOf(p)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.Timeout)
	st, err := s.Draws.DrawState(ctx, id)
	cancel()
	if err != nil {
		return err
	}
	if !st.Drawn() {
		return ticketrush.ErrDrawNotReady
	}
	etag := `"` + st.Digest + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	if noneMatch(r.Header.Values("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Entrants*(2*draw.KeySize+1), 10))
	w.WriteHeader(http.StatusOK)
	out := extendingWriter{w: w, rc: http.NewResponseController(w)}
	if err := s.Draws.WriteDrawKeys(r.Context(), id, st.Entrants, s.Timeout, out); err != nil {
		// The status is sent: all that is left is to cut the body short, which the client sees.
		s.Log.Error("draw keys cut short", "concert", id, "err", err)
	}
	return nil
}
