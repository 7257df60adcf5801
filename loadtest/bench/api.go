package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"time"
)

// minter signs user JWTs (HS256, sub and exp) the way the login service would; one per worker, since
// it reuses its HMAC state.
type minter struct {
	mac hash.Hash
	exp int64
	buf []byte
}

var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

func newMinter(secret []byte) *minter {
	return &minter{mac: hmac.New(sha256.New, secret), exp: time.Now().Add(2 * time.Hour).Unix()}
}

func (m *minter) mint(user string) string {
	payload := `{"sub":"` + user + `","exp":` + strconv.FormatInt(m.exp, 10) + `}`
	m.buf = append(m.buf[:0], jwtHeader...)
	m.buf = append(m.buf, '.')
	m.buf = base64.RawURLEncoding.AppendEncode(m.buf, []byte(payload))
	m.mac.Reset()
	m.mac.Write(m.buf)
	m.buf = append(m.buf, '.')
	m.buf = base64.RawURLEncoding.AppendEncode(m.buf, m.mac.Sum(nil))
	return string(m.buf)
}

// api is the service under test, for set-up calls (not measured) and request building.
type api struct {
	base   string // http://host:port
	admin  string // ADMIN_TOKEN
	secret []byte // JWT_SECRET
	client *http.Client
}

// fan is a user with a queue token.
type fan struct {
	user, jwt, token string
}

func (a *api) newRequest(method, path, jwt, queueToken string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if jwt != "" {
		req.Header.Set("Authorization", "Bearer "+jwt)
	}
	if queueToken != "" {
		req.Header.Set("X-Queue-Token", queueToken)
	}
	return req, nil
}

// call sends one set-up request and decodes a 2xx JSON answer into out.
func (a *api) call(ctx context.Context, method, path, bearer string, in, out any) (int, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, err
		}
	}
	req, err := a.newRequest(method, path, bearer, "", body)
	if err != nil {
		return 0, err
	}
	resp, err := a.client.Do(req.WithContext(ctx))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, snippet(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

type section struct {
	Name  string `json:"name"`
	Price int64  `json:"price"`
	Seats int    `json:"seats"`
}

type queueSettings struct {
	ActiveCapacity   int  `json:"activeCapacity,omitempty"`
	AdmitPerSecond   int  `json:"admitPerSecond,omitempty"`
	ActiveTTLSeconds int  `json:"activeTtlSeconds,omitempty"`
	HoldTTLSeconds   int  `json:"holdTtlSeconds,omitempty"`
	MaxHoldsPerUser  int  `json:"maxHoldsPerUser,omitempty"`
	Paused           bool `json:"paused"`
}

type concert struct {
	ID        string `json:"id"`
	Schedules []struct {
		ID string `json:"id"`
	} `json:"schedules"`
}

// createConcert creates a concert of n schedules (a day apart) through the admin API.
func (a *api) createConcert(ctx context.Context, title string, n int, sections []section, q queueSettings) (concert, error) {
	return a.createConcertWithSale(ctx, title, n, sections, q, time.Time{})
}

// createConcertWithSale is createConcert with a sale opening at opensAt (none when zero).
func (a *api) createConcertWithSale(ctx context.Context, title string, n int, sections []section, q queueSettings, opensAt time.Time) (concert, error) {
	var c concert
	schedules := make([]string, n)
	for i := range schedules {
		schedules[i] = time.Date(2030, 1, 1+i, 10, 0, 0, 0, time.UTC).Format(time.RFC3339)
	}
	body := map[string]any{"title": title, "venue": "bench", "schedules": schedules, "sections": sections, "queue": q}
	if !opensAt.IsZero() {
		body["sale"] = map[string]any{"opensAt": opensAt.UTC().Format(time.RFC3339)}
	}
	_, err := a.call(ctx, http.MethodPost, "/admin/v1/concerts", a.admin, body, &c)
	if err == nil && len(c.Schedules) != n {
		err = fmt.Errorf("create concert: %d schedules in the answer, want %d", len(c.Schedules), n)
	}
	return c, err
}

// routeServed reports whether the service has a route for method path: an unauthenticated call is
// refused with 401 by a route that exists, and 404 by the router when there is none.
func (a *api) routeServed(ctx context.Context, method, path string) (bool, int, error) {
	req, err := a.newRequest(method, path, "", "", []byte("{}"))
	if err != nil {
		return false, 0, err
	}
	resp, err := a.client.Do(req.WithContext(ctx))
	if err != nil {
		return false, 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed, resp.StatusCode, nil
}

// joinAll puts users in a concert's line with workers concurrent clients, returning each one's token.
func (a *api) joinAll(ctx context.Context, concertID string, users []string, workers int) ([]fan, error) {
	fans := make([]fan, len(users))
	minters := make([]*minter, workers)
	for i := range minters {
		minters[i] = newMinter(a.secret)
	}
	path := "/v1/concerts/" + concertID + "/queue"
	r := job{workers: workers, count: len(users),
		request: func(w, i int) (*http.Request, error) {
			fans[i] = fan{user: users[i], jwt: minters[w].mint(users[i])}
			return a.newRequest(http.MethodPost, path, fans[i].jwt, "", nil)
		},
		answer: func(_, i, status int, body []byte) bool {
			fans[i].token = jsonString(body, "token")
			return status/100 == 2 && fans[i].token != ""
		},
	}.run(ctx, a.client)
	if r.failed > 0 {
		return nil, fmt.Errorf("join %d fans: %d failed, first: %v", len(users), r.failed, r.firstErr)
	}
	return fans, nil
}

// jsonString returns the string member name of a flat JSON object without decoding all of it: the
// generator reads ids and tokens out of thousands of answers a second.
func jsonString(body []byte, name string) string {
	key := []byte(`"` + name + `":"`)
	i := bytes.Index(body, key)
	if i < 0 {
		return ""
	}
	rest := body[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}
