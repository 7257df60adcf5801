package http

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/web"
)

func TestPageHeaders(t *testing.T) {
	srv := pagesServer(t)
	tests := []struct {
		give      string
		wantType  string
		wantStore bool // Cache-Control no-store, no ETag: the operator's console
	}{
		{give: "/", wantType: "text/html; charset=utf-8"},
		{give: "/concerts/c1", wantType: "text/html; charset=utf-8"},
		{give: "/admin", wantType: "text/html; charset=utf-8", wantStore: true},
		{give: "/static/app.css", wantType: "text/css; charset=utf-8"},
		{give: "/static/fan.js", wantType: "text/javascript; charset=utf-8"},
		{give: "/static/admin.js", wantType: "text/javascript; charset=utf-8", wantStore: true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest("GET", tt.give, nil))
			require.Equal(t, http.StatusOK, rec.Code)
			h := rec.Header()
			assert.Equal(t, tt.wantType, h.Get("Content-Type"))
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
				assert.Contains(t, csp, want)
			}
			assert.NotContains(t, csp, "unsafe-inline")
			assert.NotContains(t, csp, "unsafe-eval")
			assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"))
			assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
			if tt.wantStore {
				assert.Equal(t, "no-store", h.Get("Cache-Control"))
				assert.Empty(t, h.Get("ETag"))
				return
			}
			assert.Equal(t, "no-cache", h.Get("Cache-Control"))
			etag := h.Get("ETag")
			require.NotEmpty(t, etag)

			// A later visit revalidates and gets a bodiless 304.
			r := httptest.NewRequest("GET", tt.give, nil)
			r.Header.Set("If-None-Match", etag)
			rec = httptest.NewRecorder()
			srv.ServeHTTP(rec, r)
			require.Equal(t, http.StatusNotModified, rec.Code)
			assert.Zero(t, rec.Body.Len())
		})
	}
}

func TestPageGzip(t *testing.T) {
	srv := pagesServer(t)
	plain := httptest.NewRecorder()
	srv.ServeHTTP(plain, httptest.NewRequest("GET", "/static/fan.js", nil))
	require.Equal(t, http.StatusOK, plain.Code)
	assert.Empty(t, plain.Header().Get("Content-Encoding"))

	r := httptest.NewRequest("GET", "/static/fan.js", nil)
	r.Header.Set("Accept-Encoding", "br, gzip;q=0.8")
	zipped := httptest.NewRecorder()
	srv.ServeHTTP(zipped, r)
	require.Equal(t, http.StatusOK, zipped.Code)
	assert.Equal(t, "gzip", zipped.Header().Get("Content-Encoding"))
	assert.Equal(t, "Accept-Encoding", zipped.Header().Get("Vary"))
	assert.NotEqual(t, plain.Header().Get("ETag"), zipped.Header().Get("ETag"), "each encoding needs its own ETag")
	zr, err := gzip.NewReader(bytes.NewReader(zipped.Body.Bytes()))
	require.NoError(t, err)
	body, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, plain.Body.Bytes(), body)
	assert.Less(t, zipped.Body.Len(), plain.Body.Len())

	r.Header.Set("Accept-Encoding", "gzip;q=0")
	refused := httptest.NewRecorder()
	srv.ServeHTTP(refused, r)
	assert.Empty(t, refused.Header().Get("Content-Encoding"))
}

// TestPagesKeepToTheCSP reads the page sources for what the Content-Security-Policy would block or
// what would open them to injection: inline scripts, style attributes, inline event handlers, HTML
// built from strings. It also checks that every file a page links to is embedded.
func TestPagesKeepToTheCSP(t *testing.T) {
	banned := map[string]*regexp.Regexp{
		"an inline script":        regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`),
		"a script without src":    regexp.MustCompile(`<script(?:\s(?:[^>s]|s[^r])*)?>`),
		"a <style> element":       regexp.MustCompile(`<style[\s>]`),
		"a style attribute":       regexp.MustCompile(`\sstyle\s*=`),
		"an inline event handler": regexp.MustCompile(`\son[a-z]+\s*=`),
		"innerHTML":               regexp.MustCompile(`\.(?:inner|outer)HTML\b|insertAdjacentHTML|document\.write`),
		"a style set from script": regexp.MustCompile(`\.style\.|setAttribute\(\s*['"]style`),
		"eval":                    regexp.MustCompile(`\beval\(|new Function\(`),
	}
	link := regexp.MustCompile(`(?:src|href)="/static/([^"]+)"`)
	files := 0
	err := fs.WalkDir(web.Files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := fs.ReadFile(web.Files, p)
		require.NoError(t, err)
		for what, re := range banned {
			assert.Nil(t, re.FindIndex(b), "%s has %s", p, what)
		}
		for _, m := range link.FindAllSubmatch(b, -1) {
			_, err := fs.Stat(web.Files, "static/"+string(m[1]))
			assert.NoError(t, err, "%s links to /static/%s, which is not embedded", p, m[1])
		}
		return nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, files, 5)
}

// TestFanPageWordsEveryCode checks that the fan's page has words for every problem code of the error
// table, in each language's catalogue.
func TestFanPageWordsEveryCode(t *testing.T) {
	js, err := fs.ReadFile(web.Files, "static/i18n.js")
	require.NoError(t, err)
	for _, lang := range []string{"ko", "en"} {
		start := bytes.Index(js, []byte("\n  "+lang+": {"))
		require.GreaterOrEqual(t, start, 0, "i18n.js has no %s catalogue", lang)
		end := bytes.Index(js[start:], []byte("\n  },"))
		require.Greater(t, end, 0)
		table := string(js[start : start+end])
		for _, code := range problemCodes() {
			assert.Regexp(t, `\n    'err\.`+code+`': '[^']{8,}'`, table, "i18n.js %s has no words for %s", lang, code)
		}
		assert.NotContains(t, strings.ToLower(table), "http ", "words for fans, not protocol terms")
	}
}

// pagesServer is the API server with no services behind it: the pages need none.
func pagesServer(t *testing.T) *Server {
	return NewServer(Deps{API: true, Registry: prometheus.NewRegistry(), Log: dbtest.Log(t)})
}
