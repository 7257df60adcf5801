package gate

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The names the gate reads a pass from and writes what it proved to (docs/gate.md).
const (
	PassHeader    = "X-Admission-Pass"
	PassCookie    = "ticketrush_pass"
	PassQuery     = "pass"
	UserHeader    = "X-Admission-User"
	ConcertHeader = "X-Admission-Concert"
)

// Config is what a Gate needs beside its verifier.
type Config struct {
	Upstream    *url.URL // the site behind the gate
	WaitingRoom string   // where a page request without a valid pass is sent
	// SecureCookie sets Secure on the pass cookie; off only when the gate listens on plain loopback, and
	// then set all the same on a request that came over HTTPS (a TLS proxy in front on the same machine).
	SecureCookie bool
	// FailOpen lets through a well-formed, unexpired pass for the concert that cannot be checked because
	// the key set cannot be fetched, without the admission headers; off, such a request is 503.
	FailOpen bool
}

// Gate is the reverse proxy that lets through requests with a valid pass for its concert.
type Gate struct {
	cfg      Config
	verifier *Verifier
	proxy    *httputil.ReverseProxy
	m        *Metrics
}

type ctxKey struct{}

// New returns the gate in front of cfg.Upstream.
func New(cfg Config, v *Verifier, m *Metrics) *Gate {
	g := &Gate{cfg: cfg, verifier: v, m: m}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(cfg.Upstream)
			pr.SetXForwarded()
			h := pr.Out.Header
			for name := range h { // never the client's own
				if admissionHeader(name) {
					delete(h, name)
				}
			}
			if c, ok := pr.In.Context().Value(ctxKey{}).(*Claims); ok {
				h[UserHeader] = []string{c.User}
				h[ConcertHeader] = []string{c.Concert}
			}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			m.upstreamErrors.Inc()
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return g
}

// ServeHTTP checks the request's pass and proxies it, or refuses it.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page := acceptsHTML(r)
	if page && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if token, ok := queryPass(r.URL.RawQuery); ok {
			g.takeQueryPass(w, r, token)
			return
		}
	}
	token, source := r.Header.Get(PassHeader), sourceHeader
	if token == "" {
		source = sourceCookie
		if c, err := r.Cookie(PassCookie); err == nil {
			token = c.Value
		}
	}
	if token == "" {
		detail := "no pass: send it in the X-Admission-Pass header or the ticketrush_pass cookie"
		if _, ok := queryPass(r.URL.RawQuery); ok {
			detail = "?pass= is taken on a page request only (GET or HEAD with Accept: text/html); send the pass in the X-Admission-Pass header"
		}
		g.refuse(w, r, page, refuse(PassMissing, detail))
		return
	}
	c, err := g.verifier.Verify(r.Context(), token)
	if err != nil {
		g.refuseOrFailOpen(w, r, page, err)
		return
	}
	g.m.admitted[source].Inc()
	g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, &c)))
}

// takeQueryPass answers a page request carrying ?pass=: a valid pass is set as the cookie and the fan
// sent to the same URL without it, so the pass leaves the address bar and the site's logs.
func (g *Gate) takeQueryPass(w http.ResponseWriter, r *http.Request, token string) {
	c, err := g.verifier.Verify(r.Context(), token)
	switch {
	case err == nil:
		g.m.admitted[sourceQuery].Inc()
	case g.failsOpen(err):
		_, c, _, _, _ = Decode(token) // its claims hold: the verifier checks them before the key
		g.m.failOpen.Inc()
	default:
		g.refuse(w, r, true, err)
		return
	}
	maxAge := int(time.Until(c.Expires) / time.Second)
	http.SetCookie(w, &http.Cookie{Name: PassCookie, Value: token, Path: "/", Expires: c.Expires, MaxAge: max(maxAge, 1),
		HttpOnly: true, Secure: g.cfg.SecureCookie || overHTTPS(r), SameSite: http.SameSiteLaxMode})
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	// One leading slash: "//host/..." would send the fan to another site (an open redirect).
	loc := "/" + strings.TrimLeft(r.URL.EscapedPath(), "/")
	if q := withoutPass(r.URL.RawQuery); q != "" {
		loc += "?" + q
	}
	h.Set("Location", loc)
	w.WriteHeader(http.StatusFound)
}

// refuseOrFailOpen refuses a pass, unless the gate fails open and the only thing wrong is that the key
// set cannot be fetched: then the request goes through without the admission headers.
func (g *Gate) refuseOrFailOpen(w http.ResponseWriter, r *http.Request, page bool, err error) {
	if g.failsOpen(err) {
		g.m.failOpen.Inc()
		g.proxy.ServeHTTP(w, r)
		return
	}
	g.refuse(w, r, page, err)
}

// failsOpen reports whether err lets a request through unchecked: FailOpen is on and the pass was
// refused for want of a key set only (the verifier checks the claims before it looks for the key).
func (g *Gate) failsOpen(err error) bool {
	var rf *Refusal
	return g.cfg.FailOpen && errors.As(err, &rf) && rf.Code == PassKeysUnavailable
}

// refuse sends a page request to the waiting room and answers any other with a problem document.
func (g *Gate) refuse(w http.ResponseWriter, r *http.Request, page bool, err error) {
	var rf *Refusal
	if !errors.As(err, &rf) {
		rf = refuse(PassMalformed, "the pass cannot be read")
	}
	g.m.refused[rf.Code].Inc()
	info := codes[rf.Code]
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if page && info.status == http.StatusForbidden {
		h.Set("Location", g.cfg.WaitingRoom)
		w.WriteHeader(http.StatusFound)
		return
	}
	if info.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "5")
	}
	body, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Code   Code   `json:"code"`
		Detail string `json:"detail"`
	}{"about:blank", info.title, info.status, rf.Code, rf.Detail})
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(info.status)
	_, _ = w.Write(append(body, '\n'))
}

// admissionHeader reports whether a header name is one the gate sets, spelled any way an origin may
// read as it: in any case, with '_' for '-' (CGI and WSGI read X-Admission_User as X-Admission-User).
func admissionHeader(name string) bool {
	for _, own := range [...]string{UserHeader, ConcertHeader} {
		if len(name) != len(own) {
			continue
		}
		same := true
		for i := 0; i < len(name) && same; i++ {
			a, b := name[i]|0x20, own[i]|0x20 // ASCII lower case; '-'|0x20 is '-', '_'|0x20 is DEL
			same = a == b || (b == '-' && name[i] == '_')
		}
		if same {
			return true
		}
	}
	return false
}

// acceptsHTML reports whether r is a page request: its Accept names text/html.
func acceptsHTML(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		if strings.Contains(a, "text/html") {
			return true
		}
	}
	return false
}

// queryPass returns the first pass= of a raw query.
func queryPass(raw string) (string, bool) {
	if !strings.Contains(raw, PassQuery+"=") {
		return "", false
	}
	for _, kv := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k == PassQuery {
			v, err := url.QueryUnescape(v)
			return v, err == nil && v != ""
		}
	}
	return "", false
}

// withoutPass is a raw query with every pass= removed and the rest kept as written.
func withoutPass(raw string) string {
	var keep []string
	for _, kv := range strings.Split(raw, "&") {
		if k, _, _ := strings.Cut(kv, "="); k != PassQuery && kv != "" {
			keep = append(keep, kv)
		}
	}
	return strings.Join(keep, "&")
}

// overHTTPS reports whether the fan reached the gate over HTTPS: its own TLS, or a proxy in front saying
// so. Trusting anyone's X-Forwarded-Proto here is safe: the most a client gains is a Secure cookie.
func overHTTPS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// LoopbackOnly reports whether a listen address is plain loopback (127.0.0.0/8, ::1, localhost), where
// a browser sends a cookie without Secure and nobody else can listen in.
func LoopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

type source int

const (
	sourceHeader source = iota
	sourceCookie
	sourceQuery
)

// Metrics are the gate's counters (docs/gate.md, "Metrics").
type Metrics struct {
	admitted       [3]prometheus.Counter
	refused        map[Code]prometheus.Counter
	failOpen       prometheus.Counter
	upstreamErrors prometheus.Counter
	keyFetches     *prometheus.CounterVec
}

// NewMetrics registers the gate's counters on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	admitted := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ticketrush_gate_admitted_total",
		Help: "Requests let through with a valid pass, by where the pass came from (header, cookie, query)."}, []string{"source"})
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ticketrush_gate_refused_total",
		Help: "Requests refused, by the code of docs/gate.md."}, []string{"code"})
	m := &Metrics{
		refused: map[Code]prometheus.Counter{},
		failOpen: prometheus.NewCounter(prometheus.CounterOpts{Name: "ticketrush_gate_fail_open_total",
			Help: "Requests let through unchecked because the key set could not be fetched (GATE_FAIL_OPEN)."}),
		upstreamErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "ticketrush_gate_upstream_errors_total",
			Help: "Admitted requests the upstream did not answer (502)."}),
		keyFetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ticketrush_gate_key_fetches_total",
			Help: "Fetches of the key set, by outcome (ok, error, garbage)."}, []string{"outcome"}),
	}
	for i, s := range []string{"header", "cookie", "query"} {
		m.admitted[i] = admitted.WithLabelValues(s)
	}
	for c := range codes {
		m.refused[c] = refused.WithLabelValues(string(c))
	}
	for _, o := range []string{"ok", "error", "garbage"} {
		m.keyFetches.WithLabelValues(o)
	}
	reg.MustRegister(admitted, refused, m.failOpen, m.upstreamErrors, m.keyFetches)
	return m
}

// RegisterKeyGauges registers the age and size of the key set in force on reg.
func RegisterKeyGauges(reg prometheus.Registerer, keys *Keys) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ticketrush_gate_key_set_age_seconds",
		Help: "Seconds since the key set in force was fetched (-1 before the first)."}, func() float64 {
		_, at := keys.Snapshot()
		if at.IsZero() {
			return -1
		}
		return time.Since(at).Seconds()
	}), prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ticketrush_gate_keys",
		Help: "Keys in the key set in force."}, func() float64 {
		set, _ := keys.Snapshot()
		return float64(len(set))
	}))
}

// KeyFetched counts a fetch of the key set; it is KeysOptions.Fetched.
func (m *Metrics) KeyFetched(outcome string) { m.keyFetches.WithLabelValues(outcome).Inc() }
