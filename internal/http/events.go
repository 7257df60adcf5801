package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// streamWriteTimeout bounds each write of a long answer (an event stream's event, a chunk of the draw's
// keys file): a reader too slow to take one in that time is cut off, so a stalled client pins neither
// a goroutine nor buffers for long. Each write extends the connection's deadline by this much, so a
// long answer outlives the server's WriteTimeout while it keeps moving.
const streamWriteTimeout = 10 * time.Second

// extendingWriter writes to w, first moving the connection's write deadline streamWriteTimeout ahead.
type extendingWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (e extendingWriter) Write(b []byte) (int, error) {
	if err := e.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	return e.w.Write(b)
}

// StopStreams ends every event stream, so that a graceful shutdown need not wait for them (register
// it with http.Server.RegisterOnShutdown).
func (s *Server) StopStreams() { s.stopStreams() }

// queueEvents is GET /v1/queue/events: the queue body as Server-Sent Events (event: status), sent at
// once, on every change and at least every pollAfterSeconds, ending after a final status. The token is
// checked before the stream starts, so a refusal is a problem document like any other.
func (s *Server) queueEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.streams, cancel)()
	started := false
	var buf bytes.Buffer
	err = s.Queue.Watch(ctx, s.Timeout, user, r.Header.Get("X-Queue-Token"), func(t ticketrush.Ticket) error {
		body, err := s.ticketJSON(user, t)
		if err != nil {
			return err
		}
		if !started {
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-store")
			h.Set("X-Accel-Buffering", "no") // proxies that buffer would hold the events back
			w.WriteHeader(http.StatusOK)
			started = true
		}
		buf.Reset()
		buf.WriteString("event: status\ndata: ")
		if err := json.NewEncoder(&buf).Encode(body); err != nil { // Encode ends the line
			return err
		}
		buf.WriteString("\n")
		if _, err := (extendingWriter{w: w, rc: rc}).Write(buf.Bytes()); err != nil {
			return err
		}
		return rc.Flush()
	})
	if started {
		// The stream is under way: an error here is the client leaving, a slow reader cut off or the
		// server stopping; there is no status left to write it in.
		return nil
	}
	return err
}
