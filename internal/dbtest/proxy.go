package dbtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy to a service that a fault test cuts (every connection dropped, new ones
// refused) and heals, or slows: Postgres cut off from the service, as the write-behind's process test
// does it, or a slow link of the partition suite.
type Proxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // ns each chunk waits in each direction
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
}

// NewProxy starts a proxy to target (host:port), stopped at the end of the test.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	return NewProxyOn(t, "127.0.0.1:0", target)
}

// NewProxyOn is NewProxy listening on addr.
func NewProxyOn(t testing.TB, addr, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); p.Cut(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(c) })
		}
	})
	return p
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *Proxy) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(c, up) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.copy(up, c); done <- struct{}{} }()
	go func() { p.copy(c, up); done <- struct{}{} }()
	<-done
}

// chunk is what one read took from a connection, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// copy is io.Copy from src to dst, each chunk written no sooner than the delay after it was read (the
// delay in force when it was read), in order: a link with that latency.
func (p *Proxy) copy(dst io.WriteCloser, src io.Reader) {
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				chunks <- chunk{b: b[:n], at: time.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.at)) // the link's latency, not synchronisation
		if _, err := dst.Write(c.b); err != nil {
			dst.Close()
			for range chunks {
			}
			return
		}
	}
}

// Slow gives every chunk of every connection, in each direction, a latency of d from now on (0: none).
func (p *Proxy) Slow(d time.Duration) { p.delay.Store(int64(d)) }

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut drops every connection and refuses new ones until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// Heal lets connections through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// Through returns u (a URL) with the proxy as its host.
func (p *Proxy) Through(t testing.TB, u string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	parsed.Host = p.ln.Addr().String()
	return parsed.String()
}
