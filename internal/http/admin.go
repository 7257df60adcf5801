package http

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

type createConcertRequest struct {
	Title     string      `json:"title"`
	Venue     string      `json:"venue"`
	Schedules []time.Time `json:"schedules"`
	Sections  []struct {
		Name  string `json:"name"`
		Price int64  `json:"price"`
		Seats int    `json:"seats"`
	} `json:"sections"`
	Queue *struct {
		ActiveCapacity   *int  `json:"activeCapacity"`
		AdmitPerSecond   *int  `json:"admitPerSecond"`
		ActiveTTLSeconds *int  `json:"activeTtlSeconds"`
		HoldTTLSeconds   *int  `json:"holdTtlSeconds"`
		MaxHoldsPerUser  *int  `json:"maxHoldsPerUser"`
		Paused           *bool `json:"paused"`

		JoinPowBits        *int  `json:"joinPowBits"`
		AccessCodeRequired *bool `json:"accessCodeRequired"`
		ActivePerSeat      *int  `json:"activePerSeat"`
		AbandonAfter       *int  `json:"abandonAfterSeconds"`
		NoShow             *int  `json:"noShowSeconds"`
		LineShards         *int  `json:"lineShards"`
	} `json:"queue"`
	Sale *saleJSON `json:"sale"`
}

// saleJSON is a concert's scheduled opening (docs/api.md, "On-sale"); the seed is never part of it.
type saleJSON struct {
	OpensAt         *time.Time `json:"opensAt"`
	PrequeueOpensAt *time.Time `json:"prequeueOpensAt"`
	ClosesAt        *time.Time `json:"closesAt,omitempty"`
}

// sale checks the request's sale at now and returns it (nil without one); the seed is the catalog's
// to draw.
func (req createConcertRequest) sale(now time.Time) (*ticketrush.Sale, error) {
	if req.Sale == nil {
		return nil, nil
	}
	if req.Sale.OpensAt == nil {
		return nil, ticketrush.Invalidf("sale.opensAt is required when sale is given")
	}
	s := &ticketrush.Sale{OpensAt: req.Sale.OpensAt.UTC().Truncate(time.Millisecond)}
	s.PrequeueOpensAt = s.OpensAt.Add(-ticketrush.DefaultPrequeueWindow)
	if req.Sale.PrequeueOpensAt != nil {
		s.PrequeueOpensAt = req.Sale.PrequeueOpensAt.UTC().Truncate(time.Millisecond)
	}
	if req.Sale.ClosesAt != nil {
		s.ClosesAt = req.Sale.ClosesAt.UTC().Truncate(time.Millisecond)
	}
	return s, s.Validate(now)
}

func (req createConcertRequest) concert() ticketrush.Concert {
	c := ticketrush.Concert{Title: req.Title, Venue: req.Venue, Queue: ticketrush.DefaultQueueSettings()}
	for _, at := range req.Schedules {
		c.Schedules = append(c.Schedules, ticketrush.Schedule{StartsAt: at})
	}
	for _, s := range req.Sections {
		c.Sections = append(c.Sections, ticketrush.Section{Name: s.Name, Price: s.Price, Seats: s.Seats})
	}
	if q := req.Queue; q != nil {
		set(&c.Queue.ActiveCapacity, q.ActiveCapacity)
		set(&c.Queue.AdmitPerSecond, q.AdmitPerSecond)
		set(&c.Queue.MaxHoldsPerUser, q.MaxHoldsPerUser)
		set(&c.Queue.Paused, q.Paused)
		set(&c.Queue.JoinPowBits, q.JoinPowBits)
		set(&c.Queue.AccessCodeRequired, q.AccessCodeRequired)
		set(&c.Queue.ActivePerSeat, q.ActivePerSeat)
		set(&c.Queue.AbandonAfter, secs(q.AbandonAfter))
		set(&c.Queue.NoShow, secs(q.NoShow))
		set(&c.Queue.LineShards, q.LineShards)
		if q.LineShards != nil && *q.LineShards == 0 {
			c.Queue.LineShards = -1 // 0 asks for the default only when left out: given, it is out of range
		}
		set(&c.Queue.ActiveTTL, secs(q.ActiveTTLSeconds))
		set(&c.Queue.HoldTTL, secs(q.HoldTTLSeconds))
	}
	return c
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

type queueSettingsJSON struct {
	ActiveCapacity   int  `json:"activeCapacity"`
	AdmitPerSecond   int  `json:"admitPerSecond"`
	ActiveTTLSeconds int  `json:"activeTtlSeconds"`
	HoldTTLSeconds   int  `json:"holdTtlSeconds"`
	MaxHoldsPerUser  int  `json:"maxHoldsPerUser"`
	Paused           bool `json:"paused"`

	JoinPowBits        int  `json:"joinPowBits"`
	AccessCodeRequired bool `json:"accessCodeRequired"`
	ActivePerSeat      int  `json:"activePerSeat"`
	AbandonAfter       int  `json:"abandonAfterSeconds"`
	NoShow             int  `json:"noShowSeconds"`
	LineShards         int  `json:"lineShards"`
}

func toQueueSettingsJSON(q ticketrush.QueueSettings) queueSettingsJSON {
	return queueSettingsJSON{
		ActiveCapacity: q.ActiveCapacity, AdmitPerSecond: q.AdmitPerSecond,
		ActiveTTLSeconds: int(q.ActiveTTL / time.Second), HoldTTLSeconds: int(q.HoldTTL / time.Second),
		MaxHoldsPerUser: q.MaxHoldsPerUser, Paused: q.Paused,
		JoinPowBits: q.JoinPowBits, AccessCodeRequired: q.AccessCodeRequired, ActivePerSeat: q.ActivePerSeat,
		AbandonAfter: int(q.AbandonAfter / time.Second), NoShow: int(q.NoShow / time.Second),
		LineShards: max(1, q.LineShards),
	}
}

type scheduleJSON struct {
	ID       string    `json:"id"`
	StartsAt time.Time `json:"startsAt"`
}

type sectionJSON struct {
	Name  string `json:"name"`
	Price int64  `json:"price"`
	Seats int    `json:"seats"`
}

type adminConcertJSON struct {
	ID        string            `json:"id"`
	Title     string            `json:"title"`
	Venue     string            `json:"venue"`
	Schedules []scheduleJSON    `json:"schedules"`
	Sections  []sectionJSON     `json:"sections"`
	Queue     queueSettingsJSON `json:"queue"`
	Sale      *saleJSON         `json:"sale,omitempty"`
}

func (s *Server) createConcert(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req createConcertRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	concert := req.concert()
	sale, err := req.sale(time.Now())
	if err != nil {
		return err
	}
	concert.Sale = sale
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	c, done, err := s.Catalog.Create(r.Context(), concert, key)
	if err != nil {
		return err
	}
	s.Log.Info("operator created a concert", "concert", c.ID, "title", c.Title, "schedules", len(c.Schedules),
		"seats", c.TotalSeats()*len(c.Schedules), "sale", c.Sale != nil, "committed", done)
	status := http.StatusCreated
	if !done { // still being written: it appears under its id once committed; a retry with the key says
		status = http.StatusAccepted
		w.Header().Set("Location", "/admin/v1/concerts/"+c.ID+"/queue")
		w.Header().Set("Retry-After", "5")
	}
	out := adminConcertJSON{ID: c.ID, Title: c.Title, Venue: c.Venue, Queue: toQueueSettingsJSON(c.Queue),
		Schedules: []scheduleJSON{}, Sections: []sectionJSON{}}
	for _, sc := range c.Schedules {
		out.Schedules = append(out.Schedules, scheduleJSON{ID: sc.ID, StartsAt: sc.StartsAt.UTC()})
	}
	for _, sec := range c.Sections {
		out.Sections = append(out.Sections, sectionJSON{Name: sec.Name, Price: sec.Price, Seats: sec.Seats})
	}
	if c.Sale != nil {
		opens, pq := c.Sale.OpensAt.UTC(), c.Sale.PrequeueOpensAt.UTC()
		out.Sale = &saleJSON{OpensAt: &opens, PrequeueOpensAt: &pq, ClosesAt: utcOrNil(c.Sale.ClosesAt)}
	}
	writeJSON(w, status, out)
	return nil
}

type queueStateJSON struct {
	Waiting  int64  `json:"waiting"`
	Active   int64  `json:"active"`
	Admitted uint64 `json:"admitted"`
	queueSettingsJSON
	Seats struct {
		Available int64 `json:"available"`
		Held      int64 `json:"held"`
		Sold      int64 `json:"sold"`
	} `json:"seats"`
	Prequeue  int64      `json:"prequeue"`
	OpensAt   *time.Time `json:"opensAt"`
	SoldOut   bool       `json:"soldOut"`
	Abandoned int64      `json:"abandoned"`
}

func (s *Server) getQueue(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, err := concertID(p)
	if err != nil {
		return err
	}
	st, err := s.Catalog.QueueState(r.Context(), id)
	if err != nil {
		return err
	}
	out := queueStateJSON{Waiting: st.Waiting, Active: st.Active, Admitted: st.Admitted,
		queueSettingsJSON: toQueueSettingsJSON(st.Settings), SoldOut: st.SoldOut, Abandoned: st.Abandoned}
	out.Seats.Available, out.Seats.Held, out.Seats.Sold = st.Seats.Available, st.Seats.Held, st.Seats.Sold
	out.Prequeue, out.OpensAt = st.Prequeue, utcOrNil(st.OpensAt)
	writeJSON(w, http.StatusOK, out)
	return nil
}

type patchQueueRequest struct {
	ActiveCapacity *int  `json:"activeCapacity"`
	AdmitPerSecond *int  `json:"admitPerSecond"`
	Paused         *bool `json:"paused"`

	JoinPowBits        *int  `json:"joinPowBits"`
	AccessCodeRequired *bool `json:"accessCodeRequired"`
	ActivePerSeat      *int  `json:"activePerSeat"`
	AbandonAfter       *int  `json:"abandonAfterSeconds"`
	NoShow             *int  `json:"noShowSeconds"`
}

// secs is a patched number of seconds as a duration, nil when it is not patched.
func secs(n *int) *time.Duration {
	if n == nil {
		return nil
	}
	d := time.Duration(*n) * time.Second
	return &d
}

// concertRequest reads a call on one concert: the concert's id (concertID), then the JSON body (decode).
func concertRequest[T any](w http.ResponseWriter, r *http.Request, p httprouter.Params) (id string, req T, err error) {
	if id, err = concertID(p); err != nil {
		return "", req, err
	}
	err = decode(w, r, &req)
	return id, req, err
}

func (s *Server) patchQueue(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, req, err := concertRequest[patchQueueRequest](w, r, p)
	if err != nil {
		return err
	}
	q, err := s.Catalog.PatchQueue(r.Context(), id, ticketrush.QueuePatch{
		ActiveCapacity: req.ActiveCapacity, AdmitPerSecond: req.AdmitPerSecond, Paused: req.Paused,
		JoinPowBits: req.JoinPowBits, AccessCodeRequired: req.AccessCodeRequired,
		ActivePerSeat: req.ActivePerSeat, AbandonAfter: secs(req.AbandonAfter), NoShow: secs(req.NoShow)})
	if err != nil {
		return err
	}
	settings := toQueueSettingsJSON(q)
	s.Log.Info("operator changed a queue", "concert", id, "activeCapacity", settings.ActiveCapacity,
		"admitPerSecond", settings.AdmitPerSecond, "paused", settings.Paused, "activePerSeat", settings.ActivePerSeat,
		"abandonAfterSeconds", settings.AbandonAfter, "noShowSeconds", settings.NoShow,
		"joinPowBits", settings.JoinPowBits, "accessCodeRequired", settings.AccessCodeRequired)
	writeJSON(w, http.StatusOK, settings)
	return nil
}

type accessCodesRequest struct {
	Count int `json:"count"`
}

// issueAccessCodes makes new presale codes for a concert; the codes are shown once, here.
func (s *Server) issueAccessCodes(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, req, err := concertRequest[accessCodesRequest](w, r, p)
	if err != nil {
		return err
	}
	if req.Count < 1 || req.Count > ticketrush.MaxAccessCodes {
		return ticketrush.Invalidf("count must be between 1 and %d", ticketrush.MaxAccessCodes)
	}
	codes, err := s.Catalog.IssueAccessCodes(r.Context(), id, req.Count)
	if err != nil {
		return err
	}
	s.Log.Info("operator issued access codes", "concert", id, "count", len(codes))
	writeJSON(w, http.StatusCreated, map[string][]string{"codes": codes})
	return nil
}
