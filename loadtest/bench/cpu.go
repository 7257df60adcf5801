package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Where a timed run's CPU went (docs/performance.md, "Where each request's CPU goes"). Everything shares one machine, so a row's rate is
// bounded by the CPU each request costs all of it together: the generator (this process), the server
// under test (the service, or the hello-world process for the ceilings), Redis, Postgres, and the rest
// of the machine (the kernel's threads, other tenants). Each is read from /proc before and after the
// run and divided by the requests the run sent.

// cpuSplit is a run's CPU per request, µs, by part.
type cpuSplit struct {
	generator, server, redis, postgres, other float64
}

func (c cpuSplit) total() float64 { return c.generator + c.server + c.redis + c.postgres + c.other }

// cpuReading is what each part has used so far, in clock ticks; busy is the whole machine's (every
// CPU's user, nice, system, irq and softirq time).
type cpuReading struct {
	generator, server, redis, postgres, busy uint64
}

// cpuMeter reads a cpuReading from proc (/proc, or a test's copy): the processes self (the
// generator) and redis, the server of a run, and every process named postgres.
type cpuMeter struct {
	proc        string
	hz          int
	self, redis int
}

// read takes a reading with server as the server under test.
func (m cpuMeter) read(server int) (cpuReading, error) {
	var r cpuReading
	var err error
	if r.generator, err = procTicks(m.proc, m.self); err != nil {
		return r, err
	}
	if r.server, err = procTicks(m.proc, server); err != nil {
		return r, err
	}
	if r.redis, err = procTicks(m.proc, m.redis); err != nil {
		return r, err
	}
	if r.postgres, err = m.postgres(); err != nil {
		return r, err
	}
	stat, err := os.ReadFile(filepath.Join(m.proc, "stat"))
	if err != nil {
		return r, err
	}
	r.busy, err = parseBusy(stat)
	return r, err
}

// cpuReading is b.cpu's reading for a run of row: its server is hello-world's process or the service's.
func (b *bench) cpuReading(row string) (cpuReading, error) {
	if b.cpu == nil {
		return cpuReading{}, errors.New("cpu: not read")
	}
	server := b.servicePID
	if helloServed(row) {
		server = b.helloPID
	}
	return b.cpu.read(server)
}

// postgres sums the ticks of every process named postgres: the server and its backends (the bench's
// database is the only one in use while it runs). A backend that exits between two readings takes its
// ticks with it, so the figure is a floor; the service keeps its pool's connections open.
func (m cpuMeter) postgres() (uint64, error) {
	entries, err := os.ReadDir(m.proc)
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(m.proc, e.Name(), "stat"))
		if err != nil || statName(data) != "postgres" {
			continue // gone since the listing, or another program
		}
		if t, err := parseStat(data); err == nil {
			sum += t
		}
	}
	return sum, nil
}

// split is the CPU per request between two readings of a run that sent requests: other is what the
// machine spent beyond the four parts (never below zero: irq time may be counted in both).
func (m cpuMeter) split(before, after cpuReading, requests int64) (cpuSplit, error) {
	if requests <= 0 || m.hz <= 0 {
		return cpuSplit{}, errors.New("cpu: no requests")
	}
	d := func(a, b uint64) float64 {
		if b < a {
			return 0
		}
		return float64(b - a)
	}
	per := 1e6 / float64(m.hz) / float64(requests) // µs per tick per request
	c := cpuSplit{
		generator: d(before.generator, after.generator) * per,
		server:    d(before.server, after.server) * per,
		redis:     d(before.redis, after.redis) * per,
		postgres:  d(before.postgres, after.postgres) * per,
	}
	c.other = max(0, d(before.busy, after.busy)*per-c.generator-c.server-c.redis-c.postgres)
	return c, nil
}

// statName is the command name of a /proc/<pid>/stat line: field 2, between the first '(' and the
// last ')'.
func statName(data []byte) string {
	i, j := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if i < 0 || j < i {
		return ""
	}
	return string(data[i+1 : j])
}

// parseBusy reads the machine's busy ticks from /proc/stat's first line ("cpu user nice system idle
// iowait irq softirq steal ..."): user, nice, system, irq and softirq. Idle, iowait and the time a
// hypervisor stole are not this machine's work.
func parseBusy(data []byte) (uint64, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q", snippet(line))
	}
	var busy uint64
	for _, i := range []int{1, 2, 3, 6, 7} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat field %d: %w", i, err)
		}
		busy += v
	}
	return busy, nil
}

// helloServed: the rows the hello-world process serves (the ceilings), not the service.
func helloServed(row string) bool {
	return row == rowHello || row == rowSeatMapBare || row == rowSeatMapGzBare
}

// printCPU writes the CPU per request of each row measured with it, and what it bounds: on a machine
// the runs keep busy, a row's rate ÷ hello's is about hello's CPU per request ÷ the row's.
func (b *bench) printCPU(w io.Writer, names []string) {
	med := map[string]measure{}
	for _, name := range names {
		if ms := b.results[name]; len(ms) > 0 {
			if m := median(ms); m.hasCPU {
				med[name] = m
			}
		}
	}
	hello, hasHello := med[rowHello]
	if len(med) == 0 {
		fmt.Fprintln(w, "\nCPU per request: n/a, no timed run read /proc")
		return
	}
	fmt.Fprintln(w, "\nCPU per request (µs of CPU per request sent, from /proc; server: the service, or hello-world for the ceilings)")
	fmt.Fprintf(w, "%-42s %9s %9s %9s %9s %9s %9s %11s\n", "figure", "generator", "server", "redis", "postgres", "other", "total", "hello ÷ it")
	fmt.Fprintln(w, strings.Repeat("-", 120))
	for _, name := range names {
		m, ok := med[name]
		if !ok {
			continue
		}
		c := m.cpu
		bound := ""
		if hasHello && c.total() > 0 && name != rowHello {
			bound = fmt.Sprintf("%.0f%%", 100*hello.cpu.total()/c.total())
		}
		fmt.Fprintf(w, "%-42s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %11s\n", name, c.generator, c.server, c.redis, c.postgres,
			c.other, c.total(), bound)
	}
	fmt.Fprintln(w, strings.Repeat("-", 120))
	fmt.Fprintln(w, "hello ÷ it: hello-world's total ÷ the row's, the share of hello's rate the row could reach with the machine's CPUs its only limit")
}
