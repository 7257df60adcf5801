package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/gate"
)

var gateHelp = help{"ticketrush gate -upstream URL -keys JWKS_URL -concert ID -waiting-room URL [-listen ADDR]", `Runs a reverse proxy that lets through to -upstream only requests with a valid admission pass for the
concert (docs/gate.md): the pass comes in the X-Admission-Pass header, the ticketrush_pass cookie, or
?pass= on a page request (answered with a redirect that sets the cookie). A page request without a
valid pass is sent to -waiting-room; any other is 403 with a code saying why. The origin gets
X-Admission-User and X-Admission-Concert from the pass. Each flag can come from the environment
variable beside it (GATE_...); the flag wins. /metrics and /healthz are served on -admin-listen.`}

// gateFlags maps each flag of ticketrush gate to its variable.
var gateFlags = map[string]string{
	"listen": "GATE_LISTEN", "admin-listen": "GATE_ADMIN_LISTEN", "upstream": "GATE_UPSTREAM",
	"keys": "GATE_KEYS_URL", "concert": "GATE_CONCERT", "waiting-room": "GATE_WAITING_ROOM",
	"issuer": "GATE_ISSUER", "fail-open": "GATE_FAIL_OPEN",
}

var gateUsage = map[string]string{
	"listen":       "address the gated site is served on (GATE_LISTEN; default 127.0.0.1:8090)",
	"admin-listen": "address of /metrics and /healthz, or off (GATE_ADMIN_LISTEN; default 127.0.0.1:9091)",
	"upstream":     "URL of the site behind the gate; required (GATE_UPSTREAM)",
	"keys":         "URL of the passes' key set, e.g. https://tickets.example/.well-known/jwks.json; required (GATE_KEYS_URL)",
	"concert":      "the concert id a pass must name in aud; required (GATE_CONCERT)",
	"waiting-room": "URL a page request without a valid pass is redirected to; required (GATE_WAITING_ROOM)",
	"issuer":       "the iss a pass must carry; empty checks none (GATE_ISSUER)",
	"fail-open":    "true: while the key set cannot be fetched, let through passes that cannot be checked (GATE_FAIL_OPEN; default false)",
}

func runGate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	for name := range gateFlags {
		if name == "fail-open" {
			fs.Bool(name, false, gateUsage[name])
			continue
		}
		fs.String(name, "", gateUsage[name])
	}
	if ok, err := parse(fs, args, stdout, gateHelp); !ok {
		return err
	}
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) { given[gateFlags[f.Name]] = f.Value.String() })
	cfg, err := config.LoadGate(func(name string) string {
		if v, ok := given[name]; ok {
			return v
		}
		return getenv(name)
	})
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveGate(ctx, cfg, log)
}

func serveGate(ctx context.Context, cfg config.Gate, log *slog.Logger) error {
	reg := prometheus.NewRegistry()
	m := gate.NewMetrics(reg)
	keys := gate.NewKeys(cfg.KeysURL, gate.KeysOptions{Fetched: func(outcome string) {
		m.KeyFetched(outcome)
		if outcome != "ok" {
			log.Warn("key set fetch", "url", cfg.KeysURL, "outcome", outcome)
		}
	}})
	gate.RegisterKeyGauges(reg, keys)
	g := gate.New(gate.Config{Upstream: cfg.Upstream, WaitingRoom: cfg.WaitingRoom,
		SecureCookie: !gate.LoopbackOnly(cfg.Listen), FailOpen: cfg.FailOpen},
		gate.NewVerifier(keys, cfg.Concert, cfg.Issuer), m)

	// The first fetch is made before the gate listens, so that it opens with the key set in hand when
	// the key set answers; when it does not, the gate opens all the same and fails as configured.
	age, ferr := keys.Fetch(ctx)
	var wg sync.WaitGroup
	loopCtx, stopLoops := context.WithCancel(ctx)
	defer func() { stopLoops(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); keys.Refresh(loopCtx, age, ferr) }()

	servers := []*http.Server{{Handler: g, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}}
	addrs := []string{cfg.Listen}
	if cfg.AdminListen != "" {
		admin := http.NewServeMux()
		admin.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		admin.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
		servers = append(servers, &http.Server{Handler: admin, ReadHeaderTimeout: 10 * time.Second})
		addrs = append(addrs, cfg.AdminListen)
	}
	served := make(chan error, len(servers))
	var bound []string
	for i, srv := range servers {
		ln, err := net.Listen("tcp", addrs[i])
		if err != nil {
			for _, s := range servers[:i] {
				_ = s.Close()
			}
			return fmt.Errorf("listen: %w", err)
		}
		bound = append(bound, ln.Addr().String())
		go func() { served <- srv.Serve(ln) }()
	}
	admin := ""
	if len(bound) > 1 {
		admin = bound[1]
	}
	log.Info("listening", "addr", bound[0], "admin", admin, "upstream", cfg.Upstream.String(),
		"concert", cfg.Concert, "fail_open", cfg.FailOpen)
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range servers {
		if serr := srv.Shutdown(shutdown); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
