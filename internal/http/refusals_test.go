package http

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestServerRefusalsAreProblems sends what net/http refuses before any handler runs to a real server
// behind Listener: every refusal is a problem document with the server's status, never text/plain.
func TestServerRefusalsAreProblems(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errMethod) // a handler's own problem passes unchanged
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })

	tests := []struct {
		name    string
		give    string
		status  int
		code    string
		content string
	}{
		{"bad percent-escape in the path", "GET /v1/reservations/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "INVALID_REQUEST", ""},
		{"control character in a header", "GET /v1/points HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", 400, "INVALID_REQUEST", ""},
		{"space in the query", "GET /v1/points/history?limit= 1 HTTP/1.1\r\nHost: x\r\n\r\n", 0, "", ""},
		{"a 2 MiB URL", "GET /v1/points?x=" + strings.Repeat("a", 2<<20) + " HTTP/1.1\r\nHost: x\r\n\r\n", 431, "HEADERS_TOO_LARGE", ""},
		{"HTTP/9.9", "GET /v1/points HTTP/9.9\r\nHost: x\r\n\r\n", 505, "HTTP_VERSION_NOT_SUPPORTED", ""},
		{"Transfer-Encoding gzip", "POST /v1/points/charges HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "NOT_IMPLEMENTED", ""},
		{"a handler's problem", "GET /v1/points HTTP/1.1\r\nHost: x\r\n\r\n", 405, "METHOD_NOT_ALLOWED", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
			go func() { _, _ = io.WriteString(c, tt.give) }() // the server may answer before reading it all
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			defer res.Body.Close()
			if tt.status != 0 {
				assert.Equal(t, tt.status, res.StatusCode)
			} else {
				assert.True(t, res.StatusCode >= 400 && res.StatusCode < 600, "status %d", res.StatusCode)
			}
			assert.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
			var p problem
			require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
			assert.Equal(t, res.StatusCode, p.Status)
			assert.Equal(t, "about:blank", p.Type)
			assert.NotEmpty(t, p.Title)
			if tt.code != "" {
				assert.Equal(t, tt.code, p.Code)
			}
			info, ok := ticketrush.LookupCode(ticketrush.Code(p.Code))
			if assert.True(t, ok, "%s is not in the error table", p.Code) {
				assert.Equal(t, info.Title, p.Title, "the title is the error table's")
			}
		})
	}
}

// timeoutReader gives some bytes, then the error a connection's read deadline gives.
type timeoutReader struct{ given bool }

func (r *timeoutReader) Read(p []byte) (int, error) {
	if !r.given {
		r.given = true
		return copy(p, `{"amount":`), nil
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 18300}
	return 0, &net.OpError{Op: "read", Net: "tcp", Source: addr, Addr: addr, Err: os.ErrDeadlineExceeded}
}

// TestSlowBodyIs408: a body that does not arrive before the server's read timeout is 408 with a
// detail that says so, and nothing of the connection (it was a 400 naming both socket addresses).
func TestSlowBodyIs408(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/points/charges", &timeoutReader{})
	w := httptest.NewRecorder()
	var v struct {
		Amount json.RawMessage `json:"amount"`
	}
	err := decode(w, r, &v)
	require.True(t, errors.Is(err, errSlowBody), "got %v", err)
	assert.Equal(t, http.StatusRequestTimeout, writeError(w, err))
	assert.Equal(t, "application/problem+json", w.Header().Get("Content-Type"))
	assert.NotContains(t, w.Body.String(), "127.0.0.1")
	assert.NotContains(t, w.Body.String(), "tcp")
	assert.Contains(t, w.Body.String(), `"code":"REQUEST_TIMEOUT"`)
}
