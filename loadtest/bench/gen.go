package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/bits"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// job is one run of the load generator: workers send requests back to back on keep-alive
// connections, either for a fixed duration or until count requests have been sent.
type job struct {
	workers  int
	duration time.Duration // fixed duration when > 0
	count    int           // a fixed number of requests shared by the workers, when > 0 (with a duration: at most)
	// request builds request i (0-based, unique in the job) for worker w.
	request func(w, i int) (*http.Request, error)
	// answer sees each response and reports whether it is one the scenario expects (a 409 is an
	// expected answer of a contended hold). Nil accepts every 2xx.
	answer func(w, i, status int, body []byte) bool
}

// result is what a job measured.
type result struct {
	answered int64 // responses the scenario expects
	failed   int64 // transport errors and unexpected statuses
	statuses map[int]int64
	elapsed  time.Duration
	hist     histogram
	firstErr error
}

func (r result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.answered) / r.elapsed.Seconds()
}

func (r result) failRatio() float64 {
	if n := r.answered + r.failed; n > 0 {
		return float64(r.failed) / float64(n)
	}
	return 0
}

// newClient returns an HTTP/1.1 client that keeps one idle connection per worker.
func newClient(workers int) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConns:        workers + 16,
			MaxIdleConnsPerHost: workers + 16,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// warm opens one keep-alive connection per worker (GET url concurrently), so that a measured run
// does not pay for connection setup.
func warm(ctx context.Context, c *http.Client, url string, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return
			}
			if resp, err := c.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

// run executes j with client c.
func (j job) run(ctx context.Context, c *http.Client) result {
	parts := make([]jobPart, j.workers)
	var next atomic.Int64
	var deadline time.Time
	start := time.Now()
	if j.duration > 0 {
		deadline = start.Add(j.duration)
	}
	var wg sync.WaitGroup
	for w := range j.workers {
		wg.Go(func() { j.work(ctx, c, w, &next, deadline, &parts[w]) })
	}
	wg.Wait()
	return mergeParts(parts, time.Since(start))
}

// jobPart is what one worker of a job measured.
type jobPart struct {
	answered, failed int64
	statuses         map[int]int64
	hist             histogram
	err              error
}

// work is worker w's loop: it sends the requests it takes from next, until the deadline (when the job
// has a duration), the job's count or the end of ctx, and counts them into p.
func (j job) work(ctx context.Context, c *http.Client, w int, next *atomic.Int64, deadline time.Time, p *jobPart) {
	p.statuses = map[int]int64{}
	var buf bytes.Buffer
	for ctx.Err() == nil {
		if j.duration > 0 && !time.Now().Before(deadline) {
			return
		}
		i := int(next.Add(1) - 1)
		if (j.duration <= 0 || j.count > 0) && i >= j.count {
			return
		}
		j.send(ctx, c, w, i, &buf, p)
	}
}

// send makes worker w's request i, reads its answer into buf and counts it into p: answered when it is
// one the job expects, else failed (the worker's first error kept).
func (j job) send(ctx context.Context, c *http.Client, w, i int, buf *bytes.Buffer, p *jobPart) {
	req, err := j.request(w, i)
	if err != nil {
		p.failed++
		if p.err == nil {
			p.err = err
		}
		return
	}
	t0 := time.Now()
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		p.failed++
		if p.err == nil && ctx.Err() == nil {
			p.err = err
		}
		return
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	p.hist.add(time.Since(t0))
	p.statuses[resp.StatusCode]++
	ok := err == nil
	if ok {
		if j.answer != nil {
			ok = j.answer(w, i, resp.StatusCode, buf.Bytes())
		} else {
			ok = resp.StatusCode/100 == 2
		}
	}
	if ok {
		p.answered++
	} else {
		p.failed++
		if p.err == nil {
			p.err = fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, snippet(buf.Bytes()))
		}
	}
}

// mergeParts is the job's result from its workers' parts; its error is that of the first worker with one.
func mergeParts(parts []jobPart, elapsed time.Duration) result {
	r := result{elapsed: elapsed, statuses: map[int]int64{}}
	for _, p := range parts {
		r.answered += p.answered
		r.failed += p.failed
		r.hist.merge(&p.hist)
		for s, n := range p.statuses {
			r.statuses[s] += n
		}
		if r.firstErr == nil {
			r.firstErr = p.err
		}
	}
	return r
}

func snippet(b []byte) string {
	if len(b) > 160 {
		b = b[:160]
	}
	return string(bytes.TrimSpace(b))
}

// histogram counts latencies in log-linear buckets of microseconds: exact below 128 µs, then 64
// buckets per power of two (under 1.6% error), up to about 2^60 µs.
type histogram struct {
	counts [64 * 64]int64
	n      int64
}

const subBuckets = 64

func bucketOf(d time.Duration) int {
	us := uint64(d / time.Microsecond)
	if us < 2*subBuckets {
		return int(us)
	}
	e := bits.Len64(us) - 7 // us>>e is in [64, 128)
	return subBuckets*e + int(us>>e)
}

// lowerBound is the smallest latency of bucket i.
func lowerBound(i int) time.Duration {
	if i < 2*subBuckets {
		return time.Duration(i) * time.Microsecond
	}
	e := i/subBuckets - 1
	m := i - subBuckets*e
	return time.Duration(uint64(m)<<e) * time.Microsecond
}

func (h *histogram) add(d time.Duration) {
	i := bucketOf(d)
	if i >= len(h.counts) {
		i = len(h.counts) - 1
	}
	h.counts[i]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the latency under which a fraction q of the samples fall (bucket midpoint).
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := lowerBound(i), lowerBound(i+1)
			return lo + (hi-lo)/2
		}
	}
	return lowerBound(len(h.counts) - 1)
}
