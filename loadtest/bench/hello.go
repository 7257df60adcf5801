package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// hello is the ceiling: the smallest net/http server there is.
func hello(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("hello", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "Hello, World!") })
	blobs := &blobServer{blobs: map[string]blob{}}
	mux.HandleFunc("PUT /blob/{name}", blobs.put)
	mux.HandleFunc("GET /blob/{name}", blobs.get)
	srv := &http.Server{Addr: *addr, Handler: mux}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "listening", ln.Addr().String())
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runWrk drives url with wrk -t1 -c64 for d and reads its requests per second and percentiles.
func runWrk(ctx context.Context, url string, d time.Duration) (measure, error) {
	out, err := exec.CommandContext(ctx, "wrk", "-t1", "-c64", "-d"+strconv.Itoa(int(d.Seconds()+0.5))+"s", "--latency", url).Output()
	if err != nil {
		return measure{}, fmt.Errorf("wrk: %w", err)
	}
	var m measure
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			m.rate, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 2 && f[0] == "50%":
			m.p50 = wrkDuration(f[1])
		case len(f) == 2 && f[0] == "99%":
			m.p99 = wrkDuration(f[1])
		}
	}
	if m.rate == 0 {
		return m, fmt.Errorf("wrk: no Requests/sec in %q", out)
	}
	return m, nil
}

// wrkDuration reads wrk's latencies: 1.23ms, 456.00us, 1.20s.
func wrkDuration(s string) time.Duration {
	s = strings.Replace(s, "us", "µs", 1)
	d, _ := time.ParseDuration(s)
	return d
}
