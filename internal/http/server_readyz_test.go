package http

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readyz stays 200 while its dependencies answer, and its body says what the service cannot promise
// meanwhile; nothing when there is nothing to say.
func TestReadyzSaysWhatItCannotPromise(t *testing.T) {
	for _, tt := range []struct {
		name     string
		degraded func() []string
		want     []string
	}{
		{"nothing to say", nil, nil},
		{"a master without a replica in sync", func() []string { return []string{"redis: 2 slot(s)"} }, []string{"redis: 2 slot(s)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(Deps{Ready: map[string]Check{"redis": func(context.Context) error { return nil }},
				Degraded: tt.degraded, Registry: prometheus.NewRegistry(), Log: slog.New(slog.DiscardHandler)})
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			var body struct {
				Status   string   `json:"status"`
				Degraded []string `json:"degraded"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
			assert.Equal(t, "ready", body.Status)
			assert.Equal(t, tt.want, body.Degraded)
		})
	}
}
