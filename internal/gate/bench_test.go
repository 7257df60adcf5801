package gate

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// originEnv makes the test binary serve as the benchmark's origin, in a process of its own, so that the
// CPU the benchmark measures is the proxy's side alone.
const originEnv = "TICKETRUSH_GATE_BENCH_ORIGIN"

func TestMain(m *testing.M) {
	if os.Getenv(originEnv) != "" {
		serveBenchOrigin()
		return
	}
	os.Exit(m.Run())
}

func serveBenchOrigin() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	go func() { _, _ = bufio.NewReader(os.Stdin).ReadString('\n'); os.Exit(0) }() // ends with its parent
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"VIP-1","section":"VIP","price":165000,"status":"AVAILABLE"}`))
	}))
}

// startBenchOrigin starts the origin process and returns its URL.
func startBenchOrigin(b *testing.B) *url.URL {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), originEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(addr, "error") {
		b.Fatalf("the origin did not start: %q %v", addr, err)
	}
	return &url.URL{Scheme: "http", Host: strings.TrimSpace(addr)}
}

// cpuTime is the CPU (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGate runs the same requests through a bare httputil.ReverseProxy and through the gate, in
// front of the same origin (another process), each with a pass in its header: cpu-µs/op is the CPU of
// this process (handler and outbound connection; the inbound server's parsing, the same for both, is
// not in it) per request; gate-uncached verifies the pass on every request. docs/gate.md "Cost" has the
// figures.
func BenchmarkGate(b *testing.B) {
	origin := startBenchOrigin(b)
	s := newSigner(b, "k1")
	keys := NewKeys(newKeyServer(b, s).url(), KeysOptions{})
	if _, err := keys.Fetch(context.Background()); err != nil {
		b.Fatal(err)
	}
	v := NewVerifier(keys, testConcert, "ticketrush")
	gate := New(Config{Upstream: origin, WaitingRoom: "https://tickets.example/"}, v, NewMetrics(prometheus.NewRegistry()))
	// fresh is the gate verifying the pass on every request, as it would without its cache.
	fresh := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { v.cache.entries = nil; gate.ServeHTTP(w, r) })
	bare := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(origin); pr.SetXForwarded() }}
	pass := s.valid(b, "fan-1")
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"gate", gate}, {"bare", bare}, {"gate", gate}, {"gate-uncached", fresh}} {
		b.Run(tt.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "http://site.example/api/seats/VIP-1", nil)
			req.Header.Set(PassHeader, pass)
			req.Header.Set("Accept", "application/json")
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, start := cpuTime(b), time.Now()
			for range b.N {
				w := httptest.NewRecorder()
				tt.h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", tt.name, w.Code, w.Body)
				}
			}
			cpu, wall := cpuTime(b)-cpu0, time.Since(start)
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(b.N)/wall.Seconds(), "req/s")
		})
	}
}

// BenchmarkGateVerifyFresh is what a pass the gate has not seen costs: its whole verification, the
// Ed25519 signature check most of it.
func BenchmarkGateVerifyFresh(b *testing.B) {
	s := newSigner(b, "k1")
	keys := NewKeys(newKeyServer(b, s).url(), KeysOptions{})
	if _, err := keys.Fetch(context.Background()); err != nil {
		b.Fatal(err)
	}
	v := NewVerifier(keys, testConcert, "")
	pass := s.valid(b, "fan-1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v.cache.entries = nil
		if _, err := v.Verify(ctx, pass); err != nil {
			b.Fatal(err)
		}
	}
}
