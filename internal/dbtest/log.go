package dbtest

import (
	"log/slog"
	"sync"
	"testing"
)

// Log returns a logger for the services a test starts: its lines go to the test's output, shown when
// the test fails (and with -v), instead of being discarded. Lines logged once the test's cleanups
// registered after this call have run (a goroutine still stopping) are dropped: the testing package
// panics on output after a test ends.
func Log(t testing.TB) *slog.Logger {
	t.Helper()
	w := &testWriter{t: t}
	t.Cleanup(w.close) // registered first, so it runs after the cleanups that stop the services
	return slog.New(slog.NewTextHandler(w, nil))
}

type testWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	return w.t.Output().Write(p)
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}
