package http

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Listener wraps ln so that the refusals net/http writes by itself, before any handler runs (a request
// line or header it cannot parse, a header block over its limit, an HTTP version or Transfer-Encoding
// it does not support), go out as problem documents like every other error instead of text/plain.
func Listener(ln net.Listener) net.Listener { return problemListener{ln} }

type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	return &problemConn{Conn: c}, nil
}

// problemConn rewrites a refusal of the server's own on its way out.
type problemConn struct{ net.Conn }

func (c *problemConn) Write(p []byte) (int, error) {
	if out, ok := rewriteRefusal(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// serverErrorHeaders is what net/http writes between the status line and the body of its own
// refusals. A handler's response never looks like this: its headers come sorted and with a Date.
const serverErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// rewriteRefusal turns one of net/http's own refusals ("HTTP/1.1 400 Bad Request" + serverErrorHeaders
// + a text body, in one write) into the same status with a problem document.
func rewriteRefusal(p []byte) ([]byte, bool) {
	if len(p) < 13 || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) || (p[9] != '4' && p[9] != '5') {
		return nil, false
	}
	i := bytes.Index(p, []byte(serverErrorHeaders))
	if i < 0 || bytes.IndexByte(p[:i], '\n') >= 0 {
		return nil, false
	}
	status, err := strconv.Atoi(string(p[9:12]))
	if err != nil || http.StatusText(status) == "" {
		return nil, false
	}
	info := ticketrush.ErrorInfo(refusal(status))
	pr := problem{Type: "about:blank", Title: info.Title, Status: status, Code: string(info.Code),
		Detail: refusalDetail(string(p[i+len(serverErrorHeaders):]))}
	body, err := json.Marshal(pr)
	if err != nil {
		return nil, false
	}
	var out bytes.Buffer
	out.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	out.WriteString("Content-Type: application/problem+json\r\nConnection: close\r\n")
	out.WriteString("Content-Length: " + strconv.Itoa(len(body)+1) + "\r\n\r\n")
	out.Write(body)
	out.WriteByte('\n')
	return out.Bytes(), true
}

// refusal is the error table's line for a status net/http refuses with by itself: 400 for what it
// cannot parse, 431, 501 and 505; any other 4xx is INVALID_REQUEST, any other 5xx INTERNAL, so that a
// refusal's code, title and status always come from the one table.
func refusal(status int) error {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return ticketrush.ErrHeadersTooLarge
	case http.StatusNotImplemented:
		return ticketrush.ErrNotImplemented
	case http.StatusHTTPVersionNotSupported:
		return ticketrush.ErrHTTPVersionNotSupported
	}
	if status >= 500 {
		return ticketrush.ErrInternal
	}
	return ticketrush.ErrInvalidRequest
}

// refusalDetail is net/http's text without its leading status ("400 Bad Request: ..."), at most 200
// bytes of valid UTF-8.
func refusalDetail(text string) string {
	if _, rest, ok := strings.Cut(text, ": "); ok {
		text = rest
	} else {
		text = "the server could not read the request"
	}
	text = strings.ToValidUTF8(text, "?")
	for len(text) > 200 {
		_, size := utf8.DecodeLastRuneInString(text)
		text = text[:len(text)-size]
	}
	return text
}
