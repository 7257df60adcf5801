package http

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seriesCount counts the series of every metric family in reg.
func seriesCount(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}

// TestInventedMethodsShareOneSeries: 1,000 invented methods make no more series than one does (the
// review found one series per method).
func TestInventedMethodsShareOneSeries(t *testing.T) {
	d := realDeps(t)
	srv := NewServer(d)
	send := func(method string) {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(method, "/v1/concerts", nil))
		assert.Less(t, rec.Code, 500)
	}
	send("BREW")
	before := seriesCount(t, d.Registry)
	for i := range 1000 {
		send("M" + strconv.Itoa(i))
	}
	assert.Equal(t, before, seriesCount(t, d.Registry))
	assert.Equal(t, "other", methodLabel("GETX"))
	assert.Equal(t, "PATCH", methodLabel("PATCH"))
}

// TestAdminTokenDigest: only the exact token passes; a prefix, a suffix or an empty configured token never.
func TestAdminTokenDigest(t *testing.T) {
	s := &Server{Deps: Deps{AdminToken: testAdminToken}}
	assert.True(t, s.isAdminToken(testAdminToken))
	for _, give := range []string{"", testAdminToken[:31], testAdminToken + "x", strings.ToUpper(testAdminToken)} {
		assert.False(t, s.isAdminToken(give), give)
	}
	assert.False(t, (&Server{}).isAdminToken(""), "an unset admin token admits nobody")
}

// TestHeadersBounded: the server's header limit refuses a 1 MiB Authorization header before any handler.
func TestHeadersBounded(t *testing.T) {
	ts := httptest.NewUnstartedServer(NewServer(realDeps(t)))
	ts.Config.MaxHeaderBytes = MaxHeaderBytes
	ts.Start()
	defer ts.Close()
	req, err := http.NewRequest("GET", ts.URL+"/v1/points", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+strings.Repeat("a", 1<<20))
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}
