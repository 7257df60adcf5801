package http

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// fakeDraws returns the draw state and keys the test gives it.
type fakeDraws struct {
	State ticketrush.DrawState
	Keys  []string // hex lines
	Err   error
}

var _ Draws = (*fakeDraws)(nil)

func (d *fakeDraws) DrawState(context.Context, string) (ticketrush.DrawState, error) {
	return d.State, d.Err
}

func (d *fakeDraws) WriteDrawKeys(_ context.Context, _ string, n int64, w io.Writer) error {
	_, err := io.WriteString(w, strings.Join(d.Keys[:n], "\n")+"\n")
	return err
}

// withSale gives concert1 a sale whose pre-queue opened pqAgo ago and opens at opensIn from now.
func withSale(pqAgo, opensIn time.Duration) func(*fakes) {
	return func(f *fakes) {
		c := f.Catalog.concerts[concert1]
		c.Sale = &ticketrush.Sale{PrequeueOpensAt: time.Now().Add(-pqAgo), OpensAt: time.Now().Add(opensIn)}
		f.Catalog.concerts[concert1] = c
	}
}

// drawn makes concert1's draw done with two entrants.
func drawn(f *fakes) {
	withSale(time.Hour, -time.Minute)(f)
	f.Draws.State = ticketrush.DrawState{Sealed: true, Entrants: 2, Placed: 2, Digest: strings.Repeat("d", 64),
		DrawnAt: time.Now().Add(-time.Second)}
	f.Draws.Keys = []string{strings.Repeat("1", 64), strings.Repeat("2", 64)}
}

var drawCases = []apiCase{
	{name: "draw pending", method: "GET", path: "/v1/concerts/" + concert1 + "/draw", setup: withSale(-time.Hour, 2*time.Hour), status: 200},
	{name: "draw open", method: "GET", path: "/v1/concerts/" + concert1 + "/draw", setup: withSale(time.Minute, time.Hour), status: 200},
	{name: "draw drawn", method: "GET", path: "/v1/concerts/" + concert1 + "/draw", setup: drawn, status: 200},
	{name: "draw of a concert without a sale", method: "GET", path: "/v1/concerts/" + concert2 + "/draw", status: 404, code: "NOT_FOUND"},
	{name: "draw redis down", method: "GET", path: "/v1/concerts/" + concert1 + "/draw", status: 503, code: "UNAVAILABLE",
		setup: func(f *fakes) { withSale(time.Minute, time.Hour)(f); f.Draws.Err = ticketrush.ErrUnavailable }},
	{name: "draw keys", method: "GET", path: "/v1/concerts/" + concert1 + "/draw/keys", setup: drawn, status: 200},
	{name: "draw keys cached", method: "GET", path: "/v1/concerts/" + concert1 + "/draw/keys", setup: drawn,
		header: hdr("If-None-Match", `"`+strings.Repeat("d", 64)+`"`), status: 304},
	{name: "draw keys before the draw", method: "GET", path: "/v1/concerts/" + concert1 + "/draw/keys",
		setup: withSale(time.Minute, time.Hour), status: 409, code: "DRAW_NOT_READY"},
	{name: "join before the pre-queue", method: "POST", path: "/v1/concerts/" + concert1 + "/queue", header: asUser(userAlice),
		setup: func(f *fakes) {
			withSale(-time.Hour, 2*time.Hour)(f)
			f.Queue.Err = ticketrush.ErrSaleNotOpen
		}, status: 409, code: "SALE_NOT_OPEN"},
	{name: "draw keys without a sale", method: "GET", path: "/v1/concerts/" + concert2 + "/draw/keys", status: 404, code: "NOT_FOUND"},
}

// saleBody is createBody with a sale.
func saleBody(opensAt, prequeueOpensAt time.Time) string {
	sale := `"sale":{"opensAt":"` + opensAt.UTC().Format(time.RFC3339) + `"`
	if !prequeueOpensAt.IsZero() {
		sale += `,"prequeueOpensAt":"` + prequeueOpensAt.UTC().Format(time.RFC3339) + `"`
	}
	return strings.TrimSuffix(createBody, "}") + "," + sale + "}}"
}

var saleCreateCases = []apiCase{
	{name: "create with a sale", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body: saleBody(time.Now().Add(2*time.Hour), time.Now().Add(time.Hour)), status: 201},
	{name: "create with a sale, default pre-queue", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body: saleBody(time.Now().Add(2*time.Hour), time.Time{}), status: 201},
	{name: "create with a sale opening in the past", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body: saleBody(time.Now().Add(-time.Hour), time.Time{}), status: 400, code: "INVALID_REQUEST"},
	{name: "create with a pre-queue after the opening", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body: saleBody(time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)), status: 400, code: "INVALID_REQUEST"},
	{name: "create with a pre-queue in the past", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body: saleBody(time.Now().Add(time.Hour), time.Now().Add(-time.Hour)), status: 400, code: "INVALID_REQUEST"},
}

func init() {
	apiCases = append(apiCases, drawCases...)
	apiCases = append(apiCases, saleCreateCases...)
}
