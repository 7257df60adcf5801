package http

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// BenchmarkEventStreams prices open event streams on one instance: it opens streamCount streams of
// WAITING fans of a paused line over real TCP connections (the clients only hold their connection
// open after the first event: no client goroutines), with the view refreshing as in production, then
// measures the server's memory per stream and its CPU while nothing changes (heartbeats and view
// refreshes only). Each b.Loop iteration is one second of that idle time.
//
//	go test -run '^$' -bench BenchmarkEventStreams -benchtime 10x ./internal/http/
func BenchmarkEventStreams(b *testing.B) {
	const streamCount = 4000
	c, secret, log, svc := newPausedLine(b, "benchconcert")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type fan struct{ jwt, token string }
	fans := make([]fan, streamCount)
	for i := range fans {
		user := fmt.Sprintf("fan-%d", i)
		t, _, err := svc.Join(ctx, user, c.ID)
		if err != nil {
			b.Fatal(err)
		}
		jwt, err := auth.Mint(secret, user, time.Hour, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		fans[i] = fan{jwt, t.Token}
	}
	done := make(chan struct{})
	go func() { defer close(done); svc.RunRefresher(ctx, 200*time.Millisecond) }()
	defer func() { cancel(); <-done }()

	s := NewServer(Deps{API: true, Queue: svc, Users: auth.NewUsers(secret), Registry: prometheus.NewRegistry(), Log: log})
	srv := httptest.NewUnstartedServer(s)
	srv.Config.WriteTimeout = 15 * time.Second
	srv.Start()
	defer srv.Close()
	defer s.StopStreams()

	before := memInUse()
	conns := make([]net.Conn, 0, streamCount)
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	for _, f := range fans {
		cn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, cn)
		fmt.Fprintf(cn, "GET /v1/queue/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nX-Queue-Token: %s\r\nAccept: text/event-stream\r\n\r\n", f.jwt, f.token)
		r := bufio.NewReaderSize(cn, 512)
		line, err := r.ReadString('\n')
		if err != nil || !strings.Contains(line, "200") {
			b.Fatalf("stream: %q %v", line, err)
		}
	}
	perStream := float64(memInUse()-before) / streamCount

	cpu0, wall0 := dbtest.ProcessCPU(b), time.Now()
	for b.Loop() {
		time.Sleep(time.Second) // the measurement window: one idle second
	}
	cpu := dbtest.ProcessCPU(b) - cpu0
	wall := time.Since(wall0)
	b.ReportMetric(perStream, "bytes/stream")
	b.ReportMetric(float64(1<<30)/perStream, "streams/GiB")
	b.ReportMetric(cpu.Seconds()/wall.Seconds()*10000/streamCount*100, "cpu%/10k-idle-streams")
}

// memInUse is the process's heap and stacks in use after a collection.
func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
