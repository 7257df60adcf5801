package http

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/web"
)

// contentSecurityPolicy allows scripts, styles and requests from this origin only: no inline script,
// no inline style, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; worker-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve: its bytes, their gzip and a validator of each.
type asset struct {
	body, gz     []byte
	ctype        string
	etag, gzEtag string // each encoding its own validator
	noStore      bool   // the operator's console: never cached
}

// assets reads web/static once.
var assets = sync.OnceValues(func() (map[string]*asset, error) { return loadAssets(web.Files, "static") })

func loadAssets(fsys fs.FS, root string) (map[string]*asset, error) {
	out := map[string]*asset{}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, root+"/")
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		etag, gzEtag := etags(body, 8)
		out[name] = &asset{body: body, gz: gzipped(body, gzip.BestCompression), ctype: ctype, etag: etag, gzEtag: gzEtag,
			noStore: strings.HasPrefix(name, "admin")}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load web assets: %w", err)
	}
	return out, nil
}

// pageRoutes serves the fan's page at / and /concerts/{id}, the operator's console at /admin and their
// files under /static/. The fragment that carries a fan's sign-in token never reaches the server.
func (s *Server) pageRoutes() {
	s.handle("GET", "/", s.page("index.html"))
	s.handle("GET", "/concerts/:concertId", s.page("index.html"))
	s.handle("GET", "/admin", s.page("admin.html"))
	s.handle("GET", "/static/*file", func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		return serveAsset(w, r, strings.TrimPrefix(p.ByName("file"), "/"))
	})
}

func (s *Server) page(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		return serveAsset(w, r, name)
	}
}

// serveAsset writes one embedded file with the security headers, gzip when the client takes it, and an
// ETag so that a later visit costs a 304.
func serveAsset(w http.ResponseWriter, r *http.Request, name string) error {
	all, err := assets()
	if err != nil {
		return err
	}
	a, ok := all[name]
	if !ok {
		return ticketrush.ErrNotFound
	}
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	body, etag, gz := a.body, a.etag, acceptsGzip(r)
	if gz {
		body, etag = a.gz, a.gzEtag
	}
	if a.noStore {
		h.Set("Cache-Control", "no-store")
		etag = "" // no validator
	} else {
		h.Set("Cache-Control", "no-cache") // revalidate each time: a deploy shows at once, a 304 is tiny
	}
	serveBytes(w, r, a.ctype, body, gz, etag)
	return nil
}

// serveBytes answers with body, of type ctype (gz: gzipped bytes, sent with Content-Encoding gzip), and,
// unless etag is "", its ETag: a request whose If-None-Match names it gets 304 with no body. The pages'
// assets and the seat maps both go out this way.
func serveBytes(w http.ResponseWriter, r *http.Request, ctype string, body []byte, gz bool, etag string) {
	h := w.Header()
	h.Set("Vary", "Accept-Encoding")
	if etag != "" {
		h.Set("ETag", etag)
		if noneMatch(r.Header.Values("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Type", ctype)
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// etags are the validators of body as sent plain and gzipped: the first n bytes of its SHA-256 in hex,
// the gzip's with -gz (each encoding its own validator, RFC 9110 8.8.3).
func etags(body []byte, n int) (plain, gz string) {
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:n])
	return `"` + tag + `"`, `"` + tag + `-gz"`
}

// gzipped is body gzipped at level (a valid gzip level).
func gzipped(body []byte, level int) []byte {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, level) // a valid level: no error
	_, _ = zw.Write(body)
	_ = zw.Close() // writes to memory: no error
	return out.Bytes()
}
