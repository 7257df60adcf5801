package http

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// saleConcert names the concert with a sale that withSale and drawn make.
const saleConcert = "{saleConcert}"

// withSale makes a concert with a sale (saleConcert) whose pre-queue opened pqAgo ago and which opens
// opensIn from now.
func withSale(pqAgo, opensIn time.Duration) func(*world) {
	return func(w *world) {
		now := w.now()
		c, _, err := w.cat.Create(context.Background(), ticketrush.Concert{Title: "On sale", Venue: "Hall",
			Queue:     ticketrush.DefaultQueueSettings(),
			Schedules: []ticketrush.Schedule{{StartsAt: now.Add(90 * 24 * time.Hour)}},
			Sections:  []ticketrush.Section{{Name: "A", Price: 1000, Seats: 5}},
			Sale: &ticketrush.Sale{PrequeueOpensAt: now.Add(-pqAgo).Truncate(time.Millisecond),
				OpensAt: now.Add(opensIn).Truncate(time.Millisecond)}}, "")
		require.NoError(w.t, err)
		w.ids[saleConcert] = c.ID
	}
}

// drawn makes saleConcert's draw done with two entrants who joined its pre-queue, run by a drawer of
// the real queue; "{digest}" is the keys file's digest.
func drawn(w *world) {
	withSale(time.Hour, time.Minute)(w)
	ctx, id := context.Background(), w.ids[saleConcert]
	for _, u := range []string{userAlice, userBob} {
		_, _, err := w.queue.Join(ctx, u, id)
		require.NoError(w.t, err)
	}
	w.at(2*time.Minute, func() {
		d := w.queue.NewDrawer(w.store.Draws, func() []string { return []string{id} }, w.cat.Sale, "contract", prometheus.NewRegistry())
		require.NoError(w.t, d.Run(ctx, id, *w.cat.Sale(id)))
	})
	st, err := w.store.Draws.DrawState(ctx, id)
	require.NoError(w.t, err)
	require.True(w.t, st.Drawn(), "the draw is done")
	w.ids["{digest}"] = st.Digest
}

var drawCases = []apiCase{
	{name: "draw pending", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw", setup: withSale(-time.Hour, 2*time.Hour), status: 200},
	{name: "draw open", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw", setup: withSale(time.Minute, time.Hour), status: 200},
	{name: "draw drawn", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw", setup: drawn, status: 200},
	{name: "draw of a concert without a sale", method: "GET", path: "/v1/concerts/" + concert2 + "/draw", status: 404, code: "NOT_FOUND"},
	{name: "draw redis down", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw", status: 503, code: "UNAVAILABLE",
		setup: withSale(time.Minute, time.Hour), down: true},
	{name: "draw internal error", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw", status: 500, code: "INTERNAL",
		setup: withSale(time.Minute, time.Hour), broken: true},
	{name: "draw keys", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw/keys", setup: drawn, status: 200},
	{name: "draw keys cached", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw/keys", setup: drawn,
		header: hdr("If-None-Match", `"{digest}"`), status: 304},
	{name: "draw keys internal error", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw/keys", setup: drawn,
		broken: true, status: 500, code: "INTERNAL"},
	{name: "draw keys redis down", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw/keys", setup: drawn,
		down: true, status: 503, code: "UNAVAILABLE"},
	{name: "draw keys before the draw", method: "GET", path: "/v1/concerts/" + saleConcert + "/draw/keys",
		setup: withSale(time.Minute, time.Hour), status: 409, code: "DRAW_NOT_READY"},
	{name: "join before the pre-queue", method: "POST", path: "/v1/concerts/" + saleConcert + "/queue", header: asUser(userAlice),
		setup: withSale(-time.Hour, 2*time.Hour), status: 409, code: "SALE_NOT_OPEN"},
	{name: "draw keys without a sale", method: "GET", path: "/v1/concerts/" + concert2 + "/draw/keys", status: 404, code: "NOT_FOUND"},
	{name: "join after the sale closed", method: "POST", path: "/v1/concerts/" + saleConcert + "/queue", header: asUser(userAlice),
		setup: withClosedSale, status: 409, code: "SALE_CLOSED"},
}

// withClosedSale makes saleConcert a sale that opened two hours ago and closed an hour ago.
func withClosedSale(w *world) {
	now := w.now()
	c, _, err := w.cat.Create(context.Background(), ticketrush.Concert{Title: "Closed", Venue: "Hall",
		Queue:     ticketrush.DefaultQueueSettings(),
		Schedules: []ticketrush.Schedule{{StartsAt: now.Add(90 * 24 * time.Hour)}},
		Sections:  []ticketrush.Section{{Name: "A", Price: 1000, Seats: 5}},
		Sale: &ticketrush.Sale{PrequeueOpensAt: now.Add(-3 * time.Hour).Truncate(time.Millisecond),
			OpensAt: now.Add(-2 * time.Hour).Truncate(time.Millisecond), ClosesAt: now.Add(-time.Hour).Truncate(time.Millisecond)}}, "")
	require.NoError(w.t, err)
	w.ids[saleConcert] = c.ID
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
	{name: "create with a pre-queue in the past (open at once)", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body: saleBody(time.Now().Add(time.Hour), time.Now().Add(-time.Hour)), status: 201},
	{name: "create with a sale and its closing", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body: closingBody(time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)), status: 201},
	{name: "create with a closing before the opening", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body: closingBody(time.Now().Add(2*time.Hour), time.Now().Add(time.Hour)), status: 400, code: "INVALID_REQUEST"},
}

// closingBody is createBody with a sale that opens at opensAt and closes at closesAt.
func closingBody(opensAt, closesAt time.Time) string {
	return strings.TrimSuffix(createBody, "}") + `,"sale":{"opensAt":"` + opensAt.UTC().Format(time.RFC3339) +
		`","closesAt":"` + closesAt.UTC().Format(time.RFC3339) + `"}}`
}

func init() {
	apiCases = append(apiCases, drawCases...)
	apiCases = append(apiCases, saleCreateCases...)
}

// powRequired makes concert2 ask every join for a proof of work.
func powRequired(w *world) {
	bits := 8
	_, err := w.cat.PatchQueue(context.Background(), w.ids[concert2], ticketrush.QueuePatch{JoinPowBits: &bits})
	require.NoError(w.t, err)
}
