package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// blob is an answer the hello server keeps in memory and sends as it is: the ceiling of the seat-map
// rows is the service's own seat map, bytes and headers, served by a bare net/http.
type blob struct {
	body                 []byte
	contentType, enc, et string
	length               string
}

// blobServer is the hello server's store of blobs: PUT /blob/{name} stores the request body (with the
// headers Content-Type, X-Blob-Encoding and X-Blob-ETag to answer with), GET /blob/{name} sends it, and
// 304 for its ETag in If-None-Match, as the service would.
type blobServer struct {
	mu    sync.RWMutex
	blobs map[string]blob
}

func (s *blobServer) put(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.blobs[r.PathValue("name")] = blob{body: body, contentType: r.Header.Get("Content-Type"),
		enc: r.Header.Get("X-Blob-Encoding"), et: r.Header.Get("X-Blob-ETag"), length: strconv.Itoa(len(body))}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *blobServer) get(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	b, ok := s.blobs[r.PathValue("name")]
	s.mu.RUnlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	if b.et != "" {
		h.Set("ETag", b.et)
		if r.Header.Get("If-None-Match") == b.et {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if b.contentType != "" {
		h.Set("Content-Type", b.contentType)
	}
	if b.enc != "" {
		h.Set("Content-Encoding", b.enc)
	}
	h.Set("Content-Length", b.length)
	_, _ = w.Write(b.body)
}

// seatMap is the concert whose seat map the seat-map rows read: one schedule of 2,000 seats, some HELD
// and some SOLD, and the fans admitted to read it.
type seatMap struct {
	path         string // GET path of the seat map
	fans         []fan
	plain, gz    []byte // the service's answers without and with Accept-Encoding: gzip
	contentType  string
	etag, gzEtag string // the ETags of the plain and the gzip answer
	gzNA         string // why the gzip rows are not measured
	revalNA      string // why the 304 row is not measured
	held, sold   int
}

const (
	seatMapReaders = 1000 // admitted fans the seat-map requests go round
	seatMapHolders = 50   // fans holding 4 seats each; the first half pay theirs
)

// seatMapRequest is fan f's read of the seat map, asking for gzip, and with If-None-Match when
// ifNoneMatch is not "".
func (b *bench) seatMapRequest(sm *seatMap, f fan, acceptGzip bool, ifNoneMatch string) (*http.Request, error) {
	req, err := b.api.newRequest(http.MethodGet, sm.path, f.jwt, f.token, nil)
	if err == nil && acceptGzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	if err == nil && ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	return req, err
}

// setupSeatMap creates the seat-map concert, holds and sells some of its seats through the API, reads
// its map once plain and once asking for gzip, and gives both answers to the hello server.
func (b *bench) setupSeatMap(ctx context.Context) (*seatMap, error) {
	sections := []section{{Name: "VIP", Price: 165000, Seats: 200}, {Name: "R", Price: 143000, Seats: 1800}}
	c, err := b.api.createConcert(ctx, "bench seat map", 1, sections, purchaseQueue)
	if err != nil {
		return nil, err
	}
	fans, err := b.admittedFans(ctx, c.ID, "bs-", seatMapHolders+seatMapReaders)
	if err != nil {
		return nil, err
	}
	// The readers are other fans than the holders: a fan who has paid for everything they held is DONE.
	sm := &seatMap{path: "/v1/concerts/" + c.ID + "/schedules/" + c.Schedules[0].ID + "/seats", fans: fans[seatMapHolders:]}
	if err := b.holdAndSell(ctx, sm, c.Schedules[0].ID, sections, fans); err != nil {
		return nil, err
	}
	if err := b.seatMapReferences(ctx, sm); err != nil {
		return nil, err
	}
	if err := b.putBlob(ctx, sm, "plain", sm.plain, "", sm.etag); err != nil {
		return nil, err
	}
	if sm.gz != nil {
		if err := b.putBlob(ctx, sm, "gzip", sm.gz, "gzip", sm.gzEtag); err != nil {
			return nil, err
		}
	}
	return sm, nil
}

// holdAndSell makes some seats of schedule HELD, some SOLD: the first seatMapHolders fans hold
// MaxHoldsPerUser seats each, at random; the first half of them charge and pay. It notes the counts in sm.
func (b *bench) holdAndSell(ctx context.Context, sm *seatMap, schedule string, sections []section, fans []fan) error {
	per := purchaseQueue.MaxHoldsPerUser
	var seatIDs []string
	for _, s := range sections {
		for n := 1; n <= s.Seats; n++ {
			seatIDs = append(seatIDs, s.Name+"-"+strconv.Itoa(n))
		}
	}
	rand.Shuffle(len(seatIDs), func(i, j int) { seatIDs[i], seatIDs[j] = seatIDs[j], seatIDs[i] })
	holds := seatMapHolders * per
	res := make([]string, holds)
	r := job{workers: b.cfg.workers, count: holds,
		request: func(_, i int) (*http.Request, error) {
			f := fans[i/per]
			return b.api.newRequest(http.MethodPost, "/v1/reservations", f.jwt, f.token,
				[]byte(`{"scheduleId":"`+schedule+`","seatId":"`+seatIDs[i]+`"}`))
		},
		answer: b.heldInto(res),
	}.run(ctx, b.api.client)
	if r.failed > 0 {
		return fmt.Errorf("seat map: %d of %d holds failed, first: %v", r.failed, holds, r.firstErr)
	}
	payers := seatMapHolders / 2
	r = b.chargeJob(fans[:payers], per*165000).run(ctx, b.api.client)
	if r.failed > 0 {
		return fmt.Errorf("seat map: %d charges failed, first: %v", r.failed, r.firstErr)
	}
	r = b.payJob(payers*per, func(i int) (*fan, string) { return &fans[i/per], res[i] }).run(ctx, b.api.client)
	if r.failed > 0 {
		return fmt.Errorf("seat map: %d payments failed, first: %v", r.failed, r.firstErr)
	}
	sm.sold, sm.held = payers*per, holds-payers*per
	return nil
}

// getSeatMap is the first reader's read of the seat map (see seatMapRequest), its body read whole; an
// answer other than 200 (or 304 to an If-None-Match) is an error. The client has DisableCompression,
// so a request without an Accept-Encoding of its own goes without one (Go's Transport would otherwise
// ask for gzip and unzip the answer behind the caller's back).
func (b *bench) getSeatMap(ctx context.Context, sm *seatMap, acceptGzip bool, ifNoneMatch string) (*http.Response, []byte, error) {
	req, err := b.seatMapRequest(sm, sm.fans[0], acceptGzip, ifNoneMatch)
	if err != nil {
		return nil, nil, err
	}
	resp, err := b.api.client.Do(req.WithContext(ctx))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK && (ifNoneMatch == "" || resp.StatusCode != http.StatusNotModified) {
		err = fmt.Errorf("seat map: GET %s: %d %s", sm.path, resp.StatusCode, snippet(body))
	}
	return resp, body, err
}

// settledSeatMap reads the plain map until it shows every hold and sale of holdAndSell, within 10 s:
// the instance's seat view is refreshed after each change it sees (within 200 ms), and a reference
// taken before the last sale shows would carry an ETag the 304 row's requests no longer match.
func (b *bench) settledSeatMap(ctx context.Context, sm *seatMap) (*http.Response, []byte, error) {
	resp, body, err := b.getSeatMap(ctx, sm, false, "")
	settled := time.NewTimer(10 * time.Second)
	defer settled.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for err == nil && (bytes.Count(body, []byte(`"SOLD"`)) != sm.sold || bytes.Count(body, []byte(`"HELD"`)) != sm.held) {
		select {
		case <-settled.C:
			return nil, nil, fmt.Errorf("seat map: %d SOLD and %d HELD after 10 s, not the %d and %d the API answered",
				bytes.Count(body, []byte(`"SOLD"`)), bytes.Count(body, []byte(`"HELD"`)), sm.sold, sm.held)
		case <-poll.C:
		}
		resp, body, err = b.getSeatMap(ctx, sm, false, "")
	}
	return resp, body, err
}

// seatMapReferences takes the reference answers into sm: the settled plain map, the gzip one (or why
// there is none) and whether the service revalidates with a 304 (or why not).
func (b *bench) seatMapReferences(ctx context.Context, sm *seatMap) error {
	resp, body, err := b.settledSeatMap(ctx, sm)
	if err != nil {
		return err
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" {
		return fmt.Errorf("seat map: answered with Content-Encoding %q to a request without Accept-Encoding", enc)
	}
	sm.plain, sm.contentType, sm.etag = body, resp.Header.Get("Content-Type"), resp.Header.Get("ETag")
	resp, body, err = b.getSeatMap(ctx, sm, true, "")
	if err != nil {
		return err
	}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("seat map: the gzip answer: %w", err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			return fmt.Errorf("seat map: the gzip answer: %w", err)
		}
		if !bytes.Equal(unzipped, sm.plain) {
			return fmt.Errorf("seat map: the gzip answer unzips to %d bytes other than the plain answer's %d", len(unzipped), len(sm.plain))
		}
		sm.gz, sm.gzEtag = body, resp.Header.Get("ETag")
	} else {
		sm.gzNA = "the service does not gzip the seat map yet (Accept-Encoding: gzip answered without Content-Encoding: gzip)"
	}

	// Revalidation: the ETag of the representation the 304 row asks for (gzip when there is one).
	if et := sm.revalETag(); et == "" {
		sm.revalNA = "the service sends no ETag with the seat map yet"
	} else if resp, _, err := b.getSeatMap(ctx, sm, sm.gz != nil, et); err != nil {
		return err
	} else if resp.StatusCode != http.StatusNotModified {
		sm.revalNA = fmt.Sprintf("the service answers If-None-Match of the seat map's own ETag with %d, not 304", resp.StatusCode)
	}
	return nil
}

// putBlob gives the hello server an answer of the seat map to serve as /blob/name, with its encoding
// and ETag.
func (b *bench) putBlob(ctx context.Context, sm *seatMap, name string, body []byte, enc, etag string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, b.helloBase+"/blob/"+name, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", sm.contentType)
	req.Header.Set("X-Blob-Encoding", enc)
	req.Header.Set("X-Blob-ETag", etag)
	resp, err := b.api.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("hello server: PUT /blob/%s: %d", name, resp.StatusCode)
	}
	return nil
}

// revalETag is the ETag the 304 row sends: the gzip answer's when the service gzips, else the plain one's.
func (sm *seatMap) revalETag() string {
	if sm.gz != nil {
		return sm.gzEtag
	}
	return sm.etag
}

// seatMaps runs the seat-map rows: each variant from the service and the same bytes from the hello
// server, back to back.
func (b *bench) seatMaps(ctx context.Context, timed func(string, job, string) result) error {
	if b.seatMap == nil {
		sm, err := b.setupSeatMap(ctx)
		if err != nil {
			return err
		}
		b.seatMap = sm
	}
	sm := b.seatMap
	health := b.api.base + "/healthz"
	var next atomic.Int64
	reader := func() fan { return sm.fans[int(next.Add(1))%len(sm.fans)] }
	service := func(acceptGzip bool, ifNoneMatch string) func(int, int) (*http.Request, error) {
		return func(int, int) (*http.Request, error) {
			return b.seatMapRequest(sm, reader(), acceptGzip, ifNoneMatch)
		}
	}
	bare := func(name string, acceptGzip bool) func(int, int) (*http.Request, error) {
		return func(int, int) (*http.Request, error) {
			req, err := http.NewRequest(http.MethodGet, b.helloBase+"/blob/"+name, nil)
			if err == nil && acceptGzip {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			return req, err
		}
	}
	plainOK := func(_, _, status int, body []byte) bool { return status == http.StatusOK && len(body) == len(sm.plain) }
	gzipOK := func(_, _, status int, body []byte) bool {
		return status == http.StatusOK && len(body) > 2 && body[0] == 0x1f && body[1] == 0x8b
	}
	d, n := b.cfg.duration, b.cfg.workers
	// The service's row first: the readers were admitted moments ago, and an admitted fan who makes no
	// gated call within the concert's noShowSeconds (120 s) is dropped.
	timed(rowSeatMap, job{workers: n, duration: d, request: service(false, ""), answer: plainOK}, health)
	timed(rowSeatMapBare, job{workers: n, duration: d, request: bare("plain", false), answer: plainOK}, b.helloURL)
	if sm.gz != nil {
		timed(rowSeatMapGz, job{workers: n, duration: d, request: service(true, ""), answer: gzipOK}, health)
		timed(rowSeatMapGzBare, job{workers: n, duration: d, request: bare("gzip", true), answer: gzipOK}, b.helloURL)
	} else {
		b.na[rowSeatMapGzBare], b.na[rowSeatMapGz] = sm.gzNA, sm.gzNA
	}
	if sm.revalNA == "" {
		timed(rowSeatMap304, job{workers: n, duration: d, request: service(sm.gz != nil, sm.revalETag()),
			answer: func(_, _, status int, _ []byte) bool { return status == http.StatusNotModified }}, health)
	} else {
		b.na[rowSeatMap304] = sm.revalNA
	}
	note := fmt.Sprintf("one schedule of 2,000 seats (%d HELD, %d SOLD), %s B plain", sm.held, sm.sold, thousands(float64(len(sm.plain))))
	if sm.gz != nil {
		note += fmt.Sprintf(", %s B gzip", thousands(float64(len(sm.gz))))
	}
	note += fmt.Sprintf("; %d clients reading as %d admitted fans in turn; the ceiling rows send the same bytes and headers from memory", n, len(sm.fans))
	b.notes[rowSeatMap] = note
	return nil
}
