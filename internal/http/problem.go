package http

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// problem is an RFC 9457 problem document with docs/api.md's extra member code.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
}

// saleNotOpenProblem is SALE_NOT_OPEN's problem document: it carries the sale's times (docs/api.md, "On-sale").
type saleNotOpenProblem struct {
	problem
	OpensAt         time.Time `json:"opensAt"`
	PrequeueOpensAt time.Time `json:"prequeueOpensAt"`
}

// errPayloadTooLarge and errMethod are the adapter's own refusals (codes of the same table).
var (
	errPayloadTooLarge = ticketrush.ErrPayloadTooLarge
	errMethod          = ticketrush.ErrMethodNotAllowed
	errSlowBody        = ticketrush.ErrRequestTimeout
	errMediaType       = ticketrush.ErrUnsupportedMediaType
)

// writeError writes err as a problem document, its status, code and title from the error table
// (ticketrush.Codes), its detail the error's own or the table's. An error without a code is a 500 whose
// detail says nothing of the cause. It returns the status.
func writeError(w http.ResponseWriter, err error) (status int) {
	info := ticketrush.ErrorInfo(err)
	p := problem{Type: "about:blank", Title: info.Title, Status: info.Status, Code: string(info.Code),
		Detail: ticketrush.ErrorDetail(err)}
	if p.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if p.Status == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1") // a user limit of at least 1/s has a token again within 1 s
	}
	if e, ok := ticketrush.AsSaleNotOpen(err); ok {
		w.Header()["Content-Type"] = problemType
		w.WriteHeader(p.Status)
		_ = json.NewEncoder(w).Encode(saleNotOpenProblem{p, e.OpensAt.UTC(), e.PrequeueOpensAt.UTC()})
		return p.Status
	}
	writeReply(w, p.Status, problemType, p)
	return p.Status
}

func writeJSON(w http.ResponseWriter, status int, v any) { writeReply(w, status, jsonType, v) }

// writeReply writes v as JSON with status and Content-Type ctype: by hand when v can (jsonAppender),
// else by encoding/json.
func writeReply(w http.ResponseWriter, status int, ctype []string, v any) {
	bp := replyBuffers.Get().(*[]byte)
	defer putReplyBuffer(bp)
	body, ok := appendReply((*bp)[:0], v)
	*bp = body[:0]
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			writeError(w, err)
			return
		}
		body = append(b, '\n')
	}
	h := w.Header()
	h["Content-Type"] = ctype
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
