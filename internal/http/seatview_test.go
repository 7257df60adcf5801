package http

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/booking"
)

// TestSeatMapFromTheView: with the seat view on, a seat map is the same bytes as the per-request read
// (the path without the view) and as encoding/json would write for the same state; gzip when asked (Vary), an ETag
// and 304 for If-None-Match; and every request still passes the token check in Redis.
func TestSeatMapFromTheView(t *testing.T) {
	sb := newSeatBench(t, 2, func(seat int) bool { return seat%3 == 0 })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	viewed := booking.NewService(sb.store.Seats, sb.store.Wallet, benchCatalog{sb.c}, sb.waiting, time.Now, log, prometheus.NewRegistry())
	viewed.EnableSeatView()
	withView := NewServer(Deps{API: true, Queue: sb.waiting, Booking: viewed, Users: sb.users,
		Registry: prometheus.NewRegistry(), Log: log})
	path := "/v1/concerts/" + sb.c.ID + "/schedules/" + sb.c.Schedules[0].ID + "/seats"
	get := func(s *Server, f seatFan, header ...string) *httptest.ResponseRecorder {
		r := gated("GET", path, nil, f, header...)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	fan := sb.fans[0]

	direct := get(sb.server, fan) // the view is off there: the seats are read with the token
	require.Equal(t, http.StatusOK, direct.Code, "%s", direct.Body)
	first := get(withView, fan)
	require.Equal(t, http.StatusOK, first.Code, "%s", first.Body)
	assert.Equal(t, direct.Body.String(), first.Body.String(), "the same bytes as the per-request read")
	var seats []struct {
		ID      string `json:"id"`
		Section string `json:"section"`
		Price   int64  `json:"price"`
		Status  string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(first.Body.Bytes(), &seats))
	want, err := json.Marshal(seats)
	require.NoError(t, err)
	assert.Equal(t, string(want)+"\n", first.Body.String(), "the bytes encoding/json writes")
	held, sold := 0, 0
	for _, s := range seats {
		held += map[bool]int{true: 1}[s.Status == "HELD"]
		sold += map[bool]int{true: 1}[s.Status == "SOLD"]
	}
	assert.Equal(t, []int{667 - 60, 60}, []int{held, sold}, "a third taken, 60 of them sold")
	assert.Equal(t, "application/json", first.Header().Get("Content-Type"))
	assert.Equal(t, "Accept-Encoding", first.Header().Get("Vary"))
	etag := first.Header().Get("ETag")
	require.NotEmpty(t, etag)

	// The same map for the other fan: same bytes and ETag; 304 when they have it.
	again := get(withView, sb.fans[1])
	assert.Equal(t, first.Body.String(), again.Body.String())
	assert.Equal(t, etag, again.Header().Get("ETag"))
	notModified := get(withView, sb.fans[1], "If-None-Match", `"other", `+etag)
	assert.Equal(t, http.StatusNotModified, notModified.Code)
	assert.Empty(t, notModified.Body.String())
	assert.Equal(t, etag, notModified.Header().Get("ETag"))
	assert.Equal(t, http.StatusOK, get(withView, fan, "If-None-Match", `"other"`).Code)

	zipped := get(withView, fan, "Accept-Encoding", "br, gzip")
	require.Equal(t, http.StatusOK, zipped.Code)
	assert.Equal(t, "gzip", zipped.Header().Get("Content-Encoding"))
	assert.Equal(t, "Accept-Encoding", zipped.Header().Get("Vary"))
	assert.Less(t, zipped.Body.Len(), first.Body.Len()/4, "compressed")
	zr, err := gzip.NewReader(bytes.NewReader(zipped.Body.Bytes()))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, first.Body.String(), string(plain), "the same map, gzipped")
	gzTag := zipped.Header().Get("ETag")
	assert.NotEqual(t, etag, gzTag, "each encoding its own validator")
	assert.Equal(t, http.StatusNotModified, get(withView, fan, "Accept-Encoding", "gzip", "If-None-Match", gzTag).Code)
	assert.Equal(t, http.StatusOK, get(withView, fan, "Accept-Encoding", "gzip", "If-None-Match", etag).Code,
		"the identity's ETag does not validate the gzip")

	// A change shows after a refresh (or at once when this instance made it), with a new ETag.
	res, err := viewed.Hold(context.Background(), "fan-1", sb.fans[1].token, sb.c.Schedules[0].ID, "VIP-2")
	require.NoError(t, err)
	changed := get(withView, fan)
	assert.NotEqual(t, etag, changed.Header().Get("ETag"))
	assert.Equal(t, get(sb.server, fan).Body.String(), changed.Body.String(), "this instance's hold shows at once")
	require.NoError(t, sb.purchases.Cancel(context.Background(), "fan-1", res.ID)) // another instance
	require.NoError(t, viewed.RefreshSeatView(context.Background()))
	assert.Equal(t, first.Body.String(), get(withView, fan).Body.String(), "another instance's cancel, after a refresh")
	assert.Equal(t, http.StatusNotModified, get(withView, fan, "If-None-Match", etag).Code, "the same map: the same ETag (of its bytes) again")

	// A fan who left through this instance gets 410 at once, not the cached map (what the instance proved
	// of the token is forgotten; a leave through another instance shows within a second).
	left := httptest.NewRequest("DELETE", "/v1/queue", nil)
	left.Header.Set("Authorization", "Bearer "+fan.jwt)
	left.Header.Set("X-Queue-Token", fan.token)
	w := httptest.NewRecorder()
	withView.ServeHTTP(w, left)
	require.Equal(t, http.StatusNoContent, w.Code, "%s", w.Body)
	gone := get(withView, fan, "If-None-Match", etag)
	assert.Equal(t, http.StatusGone, gone.Code, "%s", gone.Body)
	assert.Contains(t, gone.Body.String(), "QUEUE_TOKEN_EXPIRED")
}
