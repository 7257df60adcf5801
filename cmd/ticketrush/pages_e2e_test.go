package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/bits"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The browser tests drive the pages (web/) in Debian's headless chromium through chromedp, against the
// service started by run on port 0. They need chromium: `make test` installs it (scripts/chromium.sh).

var screenshotDir = flag.String("screenshots", "", "save a PNG of each page into this folder (make screenshots)")

// pageWait bounds each wait for the page; a page that is merely slow still passes within it.
const pageWait = 30 * time.Second

// chromium finds the browser or fails the test saying how to install it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is missing: the browser tests need it. Install Debian's package: " +
		"sudo apt-get install -y chromium (make test does it through scripts/chromium.sh)")
	return ""
}

// browser is one headless chromium with a fresh profile, for one test.
type browser struct {
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root in CI containers
		chromedp.NoFirstRun,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Every tab is a fan looking at their page: none may be throttled as a background tab.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{ctx: ctx}
}

// tab is one page in a browser context of its own: its own localStorage, as another fan's device.
type tab struct {
	t    *testing.T
	name string
	ctx  context.Context
}

// tab opens a page of width x height; when the test fails, its screenshot and text are saved.
func (b *browser) tab(t *testing.T, name string, width, height int64) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	tb := &tab{t: t, name: name, ctx: ctx}
	t.Cleanup(func() {
		if t.Failed() {
			tb.saveFailure()
		}
		cancel()
	})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("open tab %s: %v", name, err)
	}
	tb.speak("en-US,en") // the tests read the English words unless they ask for another language (tabIn)
	return tb
}

func (tb *tab) saveFailure() {
	dir, err := os.MkdirTemp("", "ticketrush-pages-")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		file := filepath.Join(dir, tb.name+".png")
		if os.WriteFile(file, png, 0o644) == nil {
			tb.t.Logf("%s: screenshot of the failure in %s", tb.name, file)
		}
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err == nil {
		tb.t.Logf("%s: the page reads:\n%s", tb.name, text)
	}
}

// sibling opens another tab in the same browser context: the same fan's second tab, sharing its
// localStorage.
func (tb *tab) sibling(t *testing.T, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(tb.ctx)
	sb := &tab{t: t, name: name, ctx: ctx}
	t.Cleanup(func() {
		if t.Failed() {
			sb.saveFailure()
		}
		cancel()
	})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1000, 900)); err != nil {
		t.Fatalf("open tab %s: %v", name, err)
	}
	return sb
}

// shot saves the page for the README when the run asks for screenshots (make screenshots).
func (tb *tab) shot(name string) {
	tb.t.Helper()
	if *screenshotDir == "" {
		return
	}
	act(tb, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)) // the sticky bar at the top, where it is
	png := act(tb, chromedp.FullScreenshot(100))
	require.NoError(tb.t, os.MkdirAll(*screenshotDir, 0o755))
	require.NoError(tb.t, os.WriteFile(filepath.Join(*screenshotDir, name+".png"), png, 0o644))
}

// act runs one action with a deadline, failing the test on an error.
func act[T any](tb *tab, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, pageWait)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(tb.t, err, "tab %s", tb.name)
	return v
}

func (tb *tab) navigate(url string) {
	tb.t.Helper()
	act(tb, chromedp.Navigate(url))
}

// wait polls a JavaScript condition until it holds; what says what the test waits for.
func (tb *tab) wait(cond, what string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, pageWait+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(pageWait)))
	if err != nil {
		tb.t.Fatalf("%s: waited %s for %s (%s): %v; the page says %q", tb.name, pageWait, what, cond, err, tb.says())
	}
}

// says is what the page tells the fan: its status line and its notice.
func (tb *tab) says() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](
		`[document.getElementById('status'), document.getElementById('live-state'), document.getElementById('notice'),
		 ...document.querySelectorAll('.field-error:not([hidden])')]
		 .filter(Boolean).map(e => e.textContent).join(' | ')`))
	return s
}

func (tb *tab) click(css string) {
	tb.t.Helper()
	act(tb, chromedp.Click(chromedp.CSS(css)))
}

func (tb *tab) text(css string) string {
	tb.t.Helper()
	return act(tb, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, css)))
}

func (tb *tab) eval(js string) string {
	tb.t.Helper()
	return act(tb, chromedp.Evaluate[string](js))
}

// fits reports whether the page needs no horizontal scrolling.
func (tb *tab) fits() bool {
	tb.t.Helper()
	if act(tb, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`)) {
		return true
	}
	// Say what sticks out, for the failure's message.
	tb.t.Logf("%s: %s", tb.name, tb.eval(`'page ' + document.documentElement.scrollWidth + ' px wide in a window of ' + window.innerWidth + ' px; sticking out: ' +
		[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
		.slice(0, 8).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' (right edge ' + Math.round(e.getBoundingClientRect().right) + ' px)').join(', ')`))
	return false
}

// pageConcert creates a concert with 3 VIP and 5 R seats and returns its id.
func (s *service) pageConcert(t *testing.T, title string, queue map[string]any) string {
	t.Helper()
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": title, "venue": "KSPO Dome",
		"schedules": []string{"2026-12-24T10:00:00Z", "2026-12-25T10:00:00Z"},
		"sections":  []map[string]any{{"name": "VIP", "price": 165000, "seats": 3}, {"name": "R", "price": 143000, "seats": 5}},
		"queue":     queue,
	}})
	require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
	var c struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	return c.ID
}

type concertJSON struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Venue string `json:"venue"`
}

const (
	lineStatus = `document.getElementById('line').dataset.status`
	position   = `document.getElementById('position').textContent`
	joinShown  = `!document.getElementById('join').hidden`
)

func TestPagesInABrowser(t *testing.T) {
	br := newBrowser(t)
	site := httptest.NewServer(http.NotFoundHandler()) // the site behind the gate an admitted fan goes on to
	t.Cleanup(site.Close)
	svc := startService(t, map[string]string{"PASS_SITE_URL": site.URL + "/tickets?lang=ko"})

	t.Run("purchase", func(t *testing.T) {
		// Capacity 1: fan A is admitted at once; x, a fan of the API, waits ahead of fan B.
		id := svc.pageConcert(t, "IU 2026", map[string]any{"activeCapacity": 1})
		a, b, x := buyer(t, "page-a"), buyer(t, "page-b"), buyer(t, "page-x")

		ta := br.tab(t, "fan-a-phone", 360, 740) // fan A buys on a phone: no page may scroll sideways
		ta.navigate(svc.url + "/#token=" + a.jwt)
		ta.wait(`document.querySelectorAll('#concert-list a').length > 0`, "the concert list")
		assert.Equal(t, svc.url+"/", ta.eval(`location.href`), "the sign-in token leaves the address bar")
		assert.True(t, ta.fits(), "the concert list scrolls sideways at 360 px")
		ta.navigate(svc.url + "/concerts/" + id)
		ta.wait(joinShown, "the join button")
		ta.click("#join-button")
		ta.wait(lineStatus+` === 'ACTIVE'`, "fan A admitted")
		// The page sends an admitted fan on to the deployment's site with a pass that verifies there.
		ta.wait(`!document.getElementById('pass-site').hidden`, "the link on to the site")
		on, err := url.Parse(ta.eval(`document.getElementById('pass-site-link').href`))
		require.NoError(t, err)
		assert.Equal(t, site.URL+"/tickets", on.Scheme+"://"+on.Host+on.Path, "the link goes to PASS_SITE_URL")
		assert.Equal(t, "ko", on.Query().Get("lang"), "the site's own parameters stay")
		assert.Contains(t, ta.text("#pass-site-link"), on.Host, "the page says where it sends the fan")
		var checked strings.Builder
		assert.NoError(t, passVerify(context.Background(), []string{"--keys", svc.url + "/.well-known/jwks.json", "--concert", id,
			on.Query().Get("pass")}, func(string) string { return "" }, &checked), "the pass the link carries: %s", checked.String())
		ta.wait(`document.querySelectorAll('#seatmap [data-seat]').length === 8`, "the seat map of the first date")
		assert.True(t, ta.fits(), "the seat map scrolls sideways at 360 px")

		_, tx := svc.join(t, x, id)
		require.Equal(t, "WAITING", tx.Status)
		require.EqualValues(t, 1, tx.Position)

		tb := br.tab(t, "fan-b", 1000, 900)
		start := time.Now()
		tb.navigate(svc.url + "/concerts/" + id + "#token=" + b.jwt)
		tb.wait(joinShown, "the join button")
		loaded := time.Since(start)
		// B has the page open in a second tab too: it follows the first tab's token, with no second join.
		tb2 := tb.sibling(t, "fan-b-second-tab")
		tb2.navigate(svc.url + "/concerts/" + id)
		tb2.wait(joinShown, "the join button in the second tab")
		click := time.Now()
		tb.click("#join-button")
		tb.wait(lineStatus+` === 'WAITING' && `+position+` === '2'`, "fan B at place 2")
		t.Logf("time to first position (open the page, then join and see the place): %s + %s",
			loaded.Round(time.Millisecond), time.Since(click).Round(time.Millisecond))
		tb2.wait(lineStatus+` === 'WAITING' && `+position+` === '2'`, "fan B's second tab at place 2")

		// x leaves: B's place falls.
		svc.leave(t, x, tx.Token)
		tb.wait(position+` === '1'`, "fan B's place falls to 1")
		assert.Equal(t, "1 / 2", tb.eval(`(p => p.value + ' / ' + p.max)(document.getElementById('progress'))`),
			"the progress bar: one place come of the two since joining")
		assert.Equal(t, "No. 1 in line · IU 2026", tb.eval(`document.title`))
		tb.audit("the line")

		// A reload keeps the place: the token is in localStorage, no second join.
		tokenKey := fmt.Sprintf(`localStorage.getItem('ticketrush.queue.%s.%s') || ''`, b.id, id)
		before := tb.eval(tokenKey)
		require.NotEmpty(t, before, "fan B's queue token is in localStorage")
		tb.navigate(svc.url + "/concerts/" + id)
		tb.wait(lineStatus+` === 'WAITING' && `+position+` === '1'`, "fan B still at place 1 after a reload")
		assert.Equal(t, before, tb.eval(tokenKey))
		assert.True(t, act(tb, chromedp.Evaluate[bool](`document.getElementById('join').hidden`)))

		// The page's weight: a fresh browser context (empty cache), then a reload (304s).
		fresh := br.tab(t, "fresh", 1000, 900)
		fresh.navigate(svc.url + "/concerts/" + id)
		first := weight(fresh)
		act(fresh, chromedp.Reload())
		t.Logf("page weight (bytes over the wire, gzip): first load %d B, a later load %d B", first, weight(fresh))

		// A holds VIP-1 and cancels it: the seat is AVAILABLE again.
		ta.audit("the seat map on a phone")
		ta.click(`[data-seat="VIP-1"]`)
		ta.wait(`!document.getElementById('hold').hidden && document.getElementById('hold-seat').textContent.includes('Section VIP, seat 1,')`, "the hold of VIP-1")
		// The view and focus go to "your seat", wherever on the map the fan was.
		ta.wait(`document.activeElement?.id === 'hold-h'`, "focus on the hold")
		assert.True(t, inView(ta, "#hold-h"), "the hold's heading is in view after the hold")
		assert.True(t, inView(ta, "#pay"), "Pay is in view after the hold")
		ta.click("#cancel")
		ta.wait(`document.getElementById('hold').hidden && document.querySelector('[data-seat="VIP-1"]').classList.contains('s-AVAILABLE')`, "VIP-1 available again")

		// A holds R-1, tries to pay without points, charges and pays; B waits all along, then is admitted.
		ta.click(`[data-seat="R-1"]`)
		ta.wait(`!document.getElementById('hold').hidden && document.getElementById('hold-seat').textContent.includes('Section R, seat 1,')`, "the hold")
		ta.wait(`document.querySelector('[data-seat="R-1"]').classList.contains('mine')`, "R-1 marked as fan A's")
		ta.wait(`document.getElementById('balance').dataset.value === '0'`, "the balance")
		ta.click("#pay")
		ta.wait(`!document.getElementById('pay-error').hidden`, "the refusal in words")
		assert.Equal(t, "You do not have enough points. Charge points, then pay.", ta.text("#pay-error"))
		// Beside the Pay button: in view with it, right below it, named by it, and said.
		assert.True(t, inView(ta, "#pay-error"), "the refusal is in view")
		assert.True(t, act(ta, chromedp.Evaluate[bool](`(() => {
			const pay = document.getElementById('pay').getBoundingClientRect(), err = document.getElementById('pay-error').getBoundingClientRect();
			return err.top >= pay.bottom && err.top - pay.bottom < 80;
		})()`)), "the refusal sits right below Pay")
		assert.Equal(t, "pay-error", ta.eval(`document.getElementById('pay').getAttribute('aria-describedby')`))
		assert.Equal(t, "You do not have enough points. Charge points, then pay.", ta.text("#announce"), "the refusal is said")
		assert.True(t, act(ta, chromedp.Evaluate[bool](`document.getElementById('notice').hidden`)), "not at the top of the page")
		ta.audit("the hold with a refused payment, on a phone")
		act(ta, chromedp.SetValue(chromedp.CSS("#amount"), "143000"))
		ta.click(`#charge-form button[type=submit]`)
		ta.wait(`document.getElementById('balance').dataset.value === '143000'`, "the charged balance")
		assert.True(t, ta.fits(), "the hold and points scroll sideways at 360 px")
		aToken := ta.eval(fmt.Sprintf(`localStorage.getItem('ticketrush.queue.%s.%s') || ''`, a.id, id))
		require.Equal(t, "WAITING", tb.eval(lineStatus), "fan B is admitted only after fan A pays")
		ta.click("#pay")
		ta.wait(`!document.getElementById('receipt').hidden`, "the receipt")
		receipt := ta.text("#receipt")
		assert.Contains(t, receipt, "R-1")
		assert.Contains(t, receipt, "143,000 points")
		ta.wait(lineStatus+` === 'DONE'`, "fan A done")
		assert.True(t, ta.fits(), "the receipt scrolls sideways at 360 px")

		tb.wait(lineStatus+` === 'ACTIVE'`, "fan B admitted after fan A paid")
		// The turn: the tab's title counts down the time left, focus moves to the dates. (No sound here:
		// B reloaded the page and has not clicked it since, and browsers play sound only after a click.)
		tb.wait(`/^Your turn: \d+:\d\d left$/.test(document.title) && document.activeElement?.closest('#dates') !== null`, "the turn's title and focus")
		tb.audit("the turn")
		tb.wait(`document.querySelector('[data-seat="R-1"]')?.classList.contains('s-SOLD')`, "R-1 sold on fan B's map")

		// Neither the sign-in tokens nor the queue tokens reach the service's log.
		logs := svc.logs.String()
		for _, secret := range []string{a.jwt, b.jwt, aToken, before} {
			require.NotEmpty(t, secret)
			assert.False(t, strings.Contains(logs, secret), "the service log holds a token: %.12s...", secret)
		}
	})

	t.Run("pause", func(t *testing.T) {
		id := svc.pageConcert(t, "Pause test", map[string]any{"activeCapacity": 1})
		y, c := buyer(t, "page-y"), buyer(t, "page-c")
		yToken := svc.admitted(t, y, id)

		tc := br.tab(t, "fan-c", 1000, 900)
		tc.navigate(svc.url + "/concerts/" + id + "#token=" + c.jwt)
		tc.wait(joinShown, "the join button")
		tc.click("#join-button")
		tc.wait(lineStatus+` === 'WAITING' && `+position+` === '1'`, "fan C at place 1")
		// y keeps the only slot: the line does not move, and the page says so instead of a wait.
		tc.wait(`document.getElementById('wait').textContent === 'the line is not moving right now'`, "the line not moving")

		op := br.tab(t, "operator", 1200, 1000)
		op.navigate(svc.url + "/admin")
		op.wait(`!document.getElementById('signin').hidden`, "the sign-in form")
		// A wrong admin token is refused at the sign-in, where it was typed.
		act(op, chromedp.SetValue(chromedp.CSS("#admin-token"), testAdminToken+"-wrong"))
		op.click(`#signin-form button[type=submit]`)
		op.wait(`!document.getElementById('signin-error').hidden`, "the wrong token refused")
		assert.Equal(t, "The service refused that admin token. Check it and try again.", op.text("#signin-error"))
		assert.True(t, act(op, chromedp.Evaluate[bool](`document.getElementById('console').hidden && !sessionStorage.getItem('ticketrush.admin')`)),
			"no console and no token kept after a wrong token")
		op.audit("the console's sign-in with a refused token")
		act(op, chromedp.SetValue(chromedp.CSS("#admin-token"), testAdminToken))
		op.click(`#signin-form button[type=submit]`)
		op.wait(fmt.Sprintf(`document.querySelector('[data-concert=%q]') !== null`, id), "the concert in the list")
		op.click(fmt.Sprintf(`[data-concert=%q]`, id))
		op.wait(`document.querySelector('[data-figure=waiting]')?.textContent === '1' && document.querySelector('[data-figure=active]')?.textContent === '1'`, "the live line")
		// The settings form shows the values in force, read from the service.
		op.wait(`document.getElementById('capacity').value === '1' && document.getElementById('rate').value === '50' && document.getElementById('s-per-seat').value === '0'`, "the settings in force")
		op.click("#pause")
		op.wait(`document.getElementById('live').dataset.paused === 'true'`, "the console showing the pause")
		require.True(t, svc.queueState(t, id).Paused)
		paused := time.Now()
		// The fan's page hears the pause on its event stream (pushed, not its own poll timer) and shows it.
		tc.wait(`document.getElementById('line').dataset.paused === 'true' && document.getElementById('wait').textContent === 'paused by the organiser'`, "the pause on the fan's page")
		t.Logf("the fan's page showed the pause %s after the operator's PATCH", time.Since(paused).Round(time.Millisecond))
		assert.Equal(t, "The organiser has paused the line. You keep your place.", tc.text("#status"))
		assert.Equal(t, "stream", tc.eval(`document.getElementById('line').dataset.via`), "the page follows the line on its event stream")
		assert.Equal(t, "Line paused · Pause test", tc.eval(`document.title`))

		// The slot frees while the line is paused: the fan's page keeps checking but does not advance.
		svc.leave(t, y, yToken)
		ticks := svc.tickCalls()
		updates := tc.eval(`document.getElementById('line').dataset.updates`)
		tc.wait(fmt.Sprintf(`Number(document.getElementById('line').dataset.updates) >= %s + 3`, updates), "three more checks")
		require.Eventually(t, func() bool { return svc.tickCalls() >= ticks+5 }, pageWait, 50*time.Millisecond)
		assert.Equal(t, "WAITING", tc.eval(lineStatus))
		assert.Equal(t, "1", tc.eval(position))
		q := svc.queueState(t, id)
		assert.Zero(t, q.Active)
		assert.EqualValues(t, 1, q.Waiting)
		op.wait(`document.querySelector('[data-figure=active]')?.textContent === '0'`, "the console's live numbers")

		op.click("#resume")
		op.wait(`document.getElementById('live').dataset.paused === 'false'`, "the console showing the line running")
		tc.wait(lineStatus+` === 'ACTIVE'`, "fan C admitted after the resume")
		// The chart of the last 10 minutes: the waiting line over time, and fan C's admission in the
		// admissions a second.
		op.wait(`Number(document.querySelector('[data-series=admitted]')?.dataset.max) > 0`, "fan C's admission on the chart")
		op.wait(`Number(document.querySelector('[data-series=waiting]')?.dataset.points) >= 3 && document.querySelector('[data-series=waiting] polyline') !== null`, "the waiting line on the chart")
		assert.Equal(t, "16", op.eval(`document.querySelector('[data-series=seats]').dataset.max`), "16 seats left all along (2 dates of 8)")
		op.audit("the console with its chart")
		op.shot("admin")
	})

	t.Run("sold out on a phone", func(t *testing.T) {
		id := svc.pageConcert(t, "Sold-out show", map[string]any{"maxHoldsPerUser": 16})
		seller := buyer(t, "page-seller")
		// The fan is admitted while seats are left; then every seat is sold under their eyes.
		fan := buyer(t, "page-phone")
		tp := br.tab(t, "fan-phone", 360, 740)
		// Signed in with the paste box this time.
		tp.navigate(svc.url + "/")
		tp.wait(`!document.getElementById('signin').hidden`, "the sign-in form")
		act(tp, chromedp.SetValue(chromedp.CSS("#jwt"), fan.jwt))
		tp.click(`#signin-form button[type=submit]`)
		tp.wait(`document.querySelectorAll('#concert-list a').length > 0`, "the concert list")
		assert.True(t, tp.fits(), "the concert list scrolls sideways at 360 px")
		tp.navigate(svc.url + "/concerts/" + id)
		tp.wait(joinShown, "the join button")
		assert.True(t, tp.fits(), "the concert page scrolls sideways at 360 px")
		tp.click("#join-button")
		tp.wait(lineStatus+` === 'ACTIVE'`, "the fan admitted")
		token := svc.admitted(t, seller, id)
		var schedules []struct {
			ID string `json:"id"`
		}
		res := svc.do(t, req{method: "GET", path: "/v1/concerts/" + id + "/schedules", headers: seller.auth(token)})
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		require.NoError(t, json.Unmarshal(res.body, &schedules))
		require.Len(t, schedules, 2)
		require.Equal(t, http.StatusCreated, svc.charge(t, seller, 10_000_000, "").status)
		var held []string
		for _, sc := range schedules {
			for seat := range svc.seatMap(t, seller, token, id, sc.ID) {
				res := svc.hold(t, seller, token, sc.ID, seat)
				require.Equal(t, http.StatusCreated, res.status, "hold %s: %s", seat, res.body)
				var r reservation
				require.NoError(t, json.Unmarshal(res.body, &r))
				held = append(held, r.ID)
			}
		}
		for _, r := range held {
			res := svc.pay(t, seller, r, "")
			require.Equal(t, http.StatusCreated, res.status, "pay: %s", res.body)
		}

		tp.wait(`document.getElementById('seatmap-box').dataset.state === 'SOLD_OUT'`, "the sold-out seat map")
		assert.Equal(t, "Sold out: every seat of this date is sold.", tp.text("#seat-summary"))
		assert.Equal(t, 2, strings.Count(tp.text("#dates"), "sold out"), "both dates read sold out")
		assert.Equal(t, 0, act(tp, chromedp.Evaluate[int](`document.querySelectorAll('#seatmap button:not([disabled])').length`)),
			"no seat of a sold-out date can be picked")
		assert.True(t, tp.fits(), "the seat map scrolls sideways at 360 px")

		// A fan who comes once every seat is sold is told so, in words, when they join.
		late := buyer(t, "page-late")
		tl := br.tab(t, "fan-late", 360, 740)
		tl.navigate(svc.url + "/#token=" + late.jwt)
		tl.navigate(svc.url + "/concerts/" + id)
		tl.wait(joinShown, "the join button")
		tl.click("#join-button")
		tl.wait(`document.getElementById('join-error').textContent === 'Sold out: every seat of this concert is sold.'`,
			"the join answered SOLD_OUT in words")
		assert.True(t, tl.fits(), "the sold-out answer scrolls sideways at 360 px")

		op := br.tab(t, "operator-phone", 360, 740)
		op.navigate(svc.url + "/admin#concert=" + id)
		act(op, chromedp.SetValue(chromedp.CSS("#admin-token"), testAdminToken))
		op.click(`#signin-form button[type=submit]`)
		op.wait(`document.querySelector('[data-figure=seats]')?.textContent === '0 / 0 / 16'`, "the console's seat figures")
		assert.True(t, op.fits(), "the console scrolls sideways at 360 px")
		op.shot("admin-phone")

		// The operator creates a concert from the console: it is listed, selected and its line shown.
		act(op, chromedp.SetValue(chromedp.CSS("#c-title"), "Created from the console"))
		act(op, chromedp.SetValue(chromedp.CSS("#c-venue"), "Olympic Hall"))
		act(op, chromedp.SetValue(chromedp.CSS("#c-dates"), "2026-12-31 11:00\n2027-01-01 11:00"))
		act(op, chromedp.SetValue(chromedp.CSS("#c-sections"), "A 99000 4"))
		op.click(`#create-form button[type=submit]`)
		op.wait(`document.getElementById('live-h').textContent === 'The line: Created from the console' && document.querySelector('[data-figure=seats]')?.textContent === '8 / 0 / 0'`, "the new concert's line")
		var list []concertJSON
		res = svc.do(t, req{method: "GET", path: "/v1/concerts"})
		require.NoError(t, json.Unmarshal(res.body, &list))
		assert.Contains(t, list, concertJSON{ID: strings.TrimPrefix(op.eval(`location.hash`), "#concert="), Title: "Created from the console", Venue: "Olympic Hall"})
	})

	t.Run("operator console settings", func(t *testing.T) {
		op := br.tab(t, "operator-settings", 360, 740)
		op.navigate(svc.url + "/admin")
		op.wait(`!document.getElementById('signin').hidden`, "the sign-in form")
		act(op, chromedp.SetValue(chromedp.CSS("#admin-token"), testAdminToken))
		op.click(`#signin-form button[type=submit]`)
		op.wait(`!document.getElementById('console').hidden`, "the console")

		// A concert with a sale a minute ahead (its pre-queue, 30 minutes long by default, is open) and
		// activePerSeat 2, created from the console.
		opens := time.Now().Add(time.Minute).UTC()
		act(op, chromedp.SetValue(chromedp.CSS("#c-title"), "Sale from the console"))
		act(op, chromedp.SetValue(chromedp.CSS("#c-venue"), "Olympic Hall"))
		act(op, chromedp.SetValue(chromedp.CSS("#c-dates"), "2026-12-31 11:00"))
		act(op, chromedp.SetValue(chromedp.CSS("#c-sections"), "A 99000 4"))
		act(op, chromedp.SetValue(chromedp.CSS("#c-opens"), opens.Format("2006-01-02 15:04:05")))
		act(op, chromedp.SetValue(chromedp.CSS("#c-per-seat"), "2"))
		op.click(`#create-form button[type=submit]`)
		op.wait(`document.getElementById('live-h').textContent === 'The line: Sale from the console' && document.querySelector('[data-figure=seats]')?.textContent === '4 / 0 / 0'`, "the new concert's line")
		id := strings.TrimPrefix(op.eval(`location.hash`), "#concert=")
		require.NotEmpty(t, id)
		assert.Equal(t, 2, svc.queueState(t, id).ActivePerSeat)
		op.wait(`document.querySelector('[data-figure=activePerSeat]')?.textContent === '2' && document.querySelector('[data-figure=soldOut]')?.textContent === 'no'`, "activePerSeat and soldOut in the figures")
		op.wait(`document.querySelector('[data-figure=opensAt]') !== null && document.querySelector('[data-figure=prequeue]')?.textContent === '0'`, "the opening and the pre-queue in the figures")

		// The draw: OPEN, with the commitment the API publishes; no keys file before the draw.
		op.wait(`document.querySelector('[data-draw=status]')?.textContent === 'OPEN'`, "the draw's status")
		d := svc.draw(t, id)
		require.Equal(t, "OPEN", d.Status)
		require.NotNil(t, d.Commitment)
		assert.Len(t, *d.Commitment, 64)
		assert.Equal(t, *d.Commitment, op.text(`[data-draw=commitment]`))
		assert.Equal(t, opens.Truncate(time.Second), d.OpensAt.UTC(), "the sale opens when the console said")
		assert.True(t, act(op, chromedp.Evaluate[bool](`document.getElementById('draw-keys').hidden`)), "no keys link before the draw")
		assert.True(t, op.fits(), "the console with a sale scrolls sideways at 360 px")

		// joinPowBits 4 and accessCodeRequired, PATCHed from the console.
		act(op, chromedp.SetValue(chromedp.CSS("#s-pow"), "4"))
		act(op, chromedp.SetValue(chromedp.CSS("#s-code"), "true"))
		op.click(`#settings-form button[type=submit]`)
		op.wait(`document.querySelector('[data-setting=joinPowBits]')?.textContent === '4' && document.querySelector('[data-setting=accessCodeRequired]')?.textContent === 'yes'`, "the saved settings")
		// The admin read has no joinPowBits nor accessCodeRequired: the API shows them by what it asks of a join.
		f := buyer(t, "page-code-0")
		require.Eventually(t, func() bool {
			res, err := svc.send(req{method: "POST", path: "/v1/concerts/" + id + "/queue/challenge", headers: f.auth("")})
			var c struct{ Bits int }
			return err == nil && res.status == http.StatusCreated && json.Unmarshal(res.body, &c) == nil && c.Bits == 4
		}, 5*time.Second, 20*time.Millisecond, "the challenge asks for 4 bits")
		requireProblem(t, svc.do(t, req{method: "POST", path: "/v1/concerts/" + id + "/queue", headers: f.auth(""),
			body: svc.solvedJoin(t, f, id, nil)}), http.StatusForbidden, "ACCESS_CODE_REQUIRED")

		// Three codes issued from the console, shown once; each lets a fan into the pre-queue.
		act(op, chromedp.SetValue(chromedp.CSS("#code-count"), "3"))
		op.click(`#codes-form button[type=submit]`)
		op.wait(`!document.getElementById('codes-box').hidden && document.getElementById('codes').value !== ''`, "the new codes")
		codes := strings.Split(op.eval(`document.getElementById('codes').value`), "\n")
		require.Len(t, codes, 3)
		seen := map[string]bool{}
		for i, code := range codes {
			assert.Len(t, code, 16, "code %q", code)
			assert.False(t, seen[code], "code %q twice", code)
			seen[code] = true
			fi := buyer(t, fmt.Sprintf("page-code-%d", i+1))
			res := svc.do(t, req{method: "POST", path: "/v1/concerts/" + id + "/queue", headers: fi.auth(""),
				body: svc.solvedJoin(t, fi, id, map[string]any{"accessCode": code})})
			require.Equal(t, http.StatusCreated, res.status, "join with code %q: %s", code, res.body)
			assert.Equal(t, "PREQUEUE", decodeTicket(t, res).Status)
		}
		op.wait(`document.querySelector('[data-figure=prequeue]')?.textContent === '3'`, "the pre-queue of three")
		assert.True(t, op.fits(), "the console with codes scrolls sideways at 360 px")
		op.shot("admin-sale")
	})
}

// solvedJoin is a join body carrying a solved proof-of-work challenge of the concert, plus extra.
func (s *service) solvedJoin(t *testing.T, f fan, concertID string, extra map[string]any) map[string]any {
	t.Helper()
	res := s.do(t, req{method: "POST", path: "/v1/concerts/" + concertID + "/queue/challenge", headers: f.auth("")})
	require.Equal(t, http.StatusCreated, res.status, "challenge: %s", res.body)
	var c struct {
		Challenge string `json:"challenge"`
		Bits      int    `json:"bits"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	body := map[string]any{"challenge": c.Challenge}
	for k, v := range extra {
		body[k] = v
	}
	for n := 0; ; n++ {
		nonce := fmt.Sprint(n)
		if leadingZeroBits(sha256.Sum256([]byte(c.Challenge+nonce))) >= c.Bits {
			body["nonce"] = nonce
			return body
		}
	}
}

// weight is what the page's last load took over the wire, in bytes: the document, its scripts and its
// stylesheet (the API calls are not counted).
func weight(tb *tab) int {
	tb.t.Helper()
	tb.wait(`document.readyState === 'complete'`, "the page loaded")
	return act(tb, chromedp.Evaluate[int](`performance.getEntriesByType('navigation')[0].transferSize +
		performance.getEntriesByType('resource').filter(e => e.initiatorType !== 'fetch').reduce((s, e) => s + e.transferSize, 0)`))
}

// nextAPI stands in front of the service and answers what a page test sets up at will: GET
// /v1/queue/events (it polls the service and streams each status as an SSE "status" event), queue bodies
// with members rewritten (a PREQUEUE status, or a status the API does not have), and joins that need a
// proof of work or an access code (docs/api.md "Abuse"); everything else goes to the service. It counts
// the page's own polls and streams.
type nextAPI struct {
	svc     *service
	proxy   *httputil.ReverseProxy
	polls   atomic.Int64                   // the page's GET /v1/queue
	streams atomic.Int64                   // the page's GET /v1/queue/events
	rewrite atomic.Pointer[map[string]any] // members set on every queue body, when not nil
	// The proof of work of docs/api.md "Abuse": joins need a solved challenge while powBits > 0.
	powBits    atomic.Int64
	challenges sync.Map // challenge -> true, until used
	solved     atomic.Int64
	// An access code (docs/api.md "Abuse"): joins need it while it is not empty.
	accessCode atomic.Pointer[string]
}

func newNextAPI(t *testing.T, svc *service) *httptest.Server {
	u, err := url.Parse(svc.url)
	require.NoError(t, err)
	n := &nextAPI{svc: svc, proxy: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(n)
	t.Cleanup(srv.Close)
	return srv
}

func (n *nextAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == "POST" && n.powBits.Load() > 0 && strings.HasSuffix(r.URL.Path, "/queue/challenge"):
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		challenge := hex.EncodeToString(b)
		n.challenges.Store(challenge, true)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"challenge": challenge, "bits": n.powBits.Load(),
			"expiresAt": time.Now().Add(2 * time.Minute).UTC()})
	case r.Method == "POST" && (n.powBits.Load() > 0 || n.accessCode.Load() != nil) && strings.HasSuffix(r.URL.Path, "/queue"):
		n.join(w, r)
	case r.Method == "GET" && r.URL.Path == "/v1/queue/events":
		n.streams.Add(1)
		n.events(w, r)
	case r.Method == "GET" && r.URL.Path == "/v1/queue":
		n.polls.Add(1)
		res, err := n.upstream(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", res.header.Get("Content-Type"))
		w.WriteHeader(res.status)
		_, _ = w.Write(n.rewritten(res))
	default:
		n.proxy.ServeHTTP(w, r)
	}
}

// join checks the access code and the proof of work, then joins through the service.
func (n *nextAPI) join(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Challenge  string `json:"challenge"`
		Nonce      string `json:"nonce"`
		AccessCode string `json:"accessCode"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	refuse := func(code string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `{"type":"about:blank","title":"Refused","status":403,"code":%q}`, code)
	}
	if code := n.accessCode.Load(); code != nil {
		switch body.AccessCode {
		case "":
			refuse("ACCESS_CODE_REQUIRED")
			return
		case *code:
		default:
			refuse("ACCESS_CODE_INVALID")
			return
		}
	}
	if bits := int(n.powBits.Load()); bits > 0 {
		if body.Challenge == "" {
			refuse("POW_REQUIRED")
			return
		}
		if _, ok := n.challenges.LoadAndDelete(body.Challenge); !ok || leadingZeroBits(sha256.Sum256([]byte(body.Challenge+body.Nonce))) < bits {
			refuse("POW_INVALID")
			return
		}
		n.solved.Add(1)
	}
	res, err := n.svc.send(req{method: "POST", path: r.URL.Path, headers: []string{"Authorization", r.Header.Get("Authorization")}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", res.header.Get("Content-Type"))
	w.WriteHeader(res.status)
	_, _ = w.Write(res.body)
}

func leadingZeroBits(sum [32]byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

func (n *nextAPI) upstream(r *http.Request) (response, error) {
	return n.svc.send(req{method: "GET", path: "/v1/queue", headers: []string{
		"Authorization", r.Header.Get("Authorization"), "X-Queue-Token", r.Header.Get("X-Queue-Token")}})
}

func (n *nextAPI) rewritten(res response) []byte {
	set := n.rewrite.Load()
	if set == nil || res.status != http.StatusOK {
		return res.body
	}
	var body map[string]any
	if json.Unmarshal(res.body, &body) != nil {
		return res.body
	}
	for k, v := range *set {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	return b
}

// events streams the token's status every 100 ms, until a final status or ACTIVE.
func (n *nextAPI) events(w http.ResponseWriter, r *http.Request) {
	res, err := n.upstream(r)
	if err != nil || res.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(res.status)
		_, _ = w.Write(res.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	for {
		body := n.rewritten(res)
		if _, err := fmt.Fprintf(w, "event: status\ndata: %s\n\n", bytes.TrimSpace(body)); err != nil {
			return
		}
		flusher.Flush()
		var tk ticket
		if json.Unmarshal(body, &tk) == nil && (tk.Status == "ACTIVE" || tk.Status == "EXPIRED" || tk.Status == "DONE" || tk.Status == "SOLD_OUT") {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(100 * time.Millisecond): // the stream's own pace, not a wait for the test
		}
		if res, err = n.upstream(r); err != nil || res.status != http.StatusOK {
			return
		}
	}
}

// TestPagesNextAPI checks the page against what docs/api.md version 2 adds: the event stream, the
// pre-queue, and a status it does not know.
func TestPagesNextAPI(t *testing.T) {
	br := newBrowser(t)
	svc := startService(t, nil)
	next := newNextAPI(t, svc)
	n := next.Config.Handler.(*nextAPI)

	id := svc.pageConcert(t, "Stream test", map[string]any{"activeCapacity": 1})
	y, f := buyer(t, "page-next-y"), buyer(t, "page-next-f")
	yToken := svc.admitted(t, y, id)

	tf := br.tab(t, "fan-f", 1000, 900)
	tf.navigate(next.URL + "/concerts/" + id + "#token=" + f.jwt)
	tf.wait(joinShown, "the join button")
	tf.click("#join-button")
	tf.wait(lineStatus+` === 'WAITING' && `+position+` === '1'`, "fan F at place 1, from the stream")
	tf.wait(`Number(document.getElementById('line').dataset.updates) >= 4`, "a few streamed statuses")
	assert.Positive(t, n.streams.Load())
	assert.Zero(t, n.polls.Load(), "the page polls while the stream works")

	// The pre-queue: a countdown to the opening and a link to the draw.
	opens := time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	n.rewrite.Store(&map[string]any{"status": "PREQUEUE", "position": 0, "opensAt": opens})
	tf.wait(lineStatus+` === 'PREQUEUE' && !document.getElementById('prequeue').hidden`, "the pre-queue")
	assert.Contains(t, tf.text("#opens-in"), "min")
	assert.Equal(t, "/v1/concerts/"+id+"/draw", tf.eval(`document.getElementById('draw-link').getAttribute('href')`))
	assert.True(t, act(tf, chromedp.Evaluate[bool](`document.getElementById('draw-key').hidden`)), "no draw key before the draw")
	n.rewrite.Store(&map[string]any{"status": "WAITING", "position": 7, "drawKey": "00c0ffee"})
	tf.wait(position+` === '7' && !document.getElementById('draw-key').hidden`, "the place and draw key after the draw")
	assert.Equal(t, "00c0ffee", tf.text("#draw-key-value"))

	// A status the page does not know: please wait.
	n.rewrite.Store(&map[string]any{"status": "SOMETHING_NEW"})
	tf.wait(lineStatus+` === 'SOMETHING_NEW'`, "the unknown status")
	assert.Equal(t, "Please wait, we will check again.", tf.text("#status"))

	// Back to the real statuses: the slot frees and the stream brings the admission.
	n.rewrite.Store(nil)
	svc.leave(t, y, yToken)
	tf.wait(lineStatus+` === 'ACTIVE'`, "fan F admitted, from the stream")
	assert.Zero(t, n.polls.Load(), "the page polls while the stream works")

	// Sold out while waiting: said in words, the token forgotten, the stream over.
	g := buyer(t, "page-next-g")
	tg := br.tab(t, "fan-g", 1000, 900)
	tg.navigate(next.URL + "/concerts/" + id + "#token=" + g.jwt)
	tg.wait(joinShown, "the join button")
	n.rewrite.Store(&map[string]any{"status": "SOLD_OUT", "position": 0})
	tg.click("#join-button")
	tg.wait(lineStatus+` === 'SOLD_OUT'`, "the sold-out status")
	assert.Equal(t, "Sold out: every seat of this concert is sold.", tg.text("#status"))
	assert.Empty(t, tg.eval(fmt.Sprintf(`localStorage.getItem('ticketrush.queue.%s.%s') || ''`, g.id, id)))
	assert.Zero(t, n.polls.Load(), "the page polls while the stream works")

	// A proof of work: the page fetches a challenge, solves it in a Web Worker and joins with it.
	n.rewrite.Store(nil)
	n.powBits.Store(14)
	h := buyer(t, "page-next-h")
	th := br.tab(t, "fan-h", 1000, 900)
	th.navigate(next.URL + "/concerts/" + id + "#token=" + h.jwt)
	th.wait(joinShown, "the join button")
	th.click("#join-button")
	th.wait(lineStatus+` === 'WAITING' && `+position+` === '2'`, "fan H in line behind fan G, after the proof of work")
	assert.EqualValues(t, 1, n.solved.Load())
	assert.True(t, act(th, chromedp.Evaluate[bool](`document.getElementById('pow').hidden`)), "the puzzle's progress is gone")

	// An access code: the field appears when the sale asks for one; a wrong code reads in words.
	n.powBits.Store(0)
	code := "PRESALE-7"
	n.accessCode.Store(&code)
	k := buyer(t, "page-next-k")
	tk := br.tab(t, "fan-k", 1000, 900)
	tk.navigate(next.URL + "/concerts/" + id + "#token=" + k.jwt)
	tk.wait(joinShown, "the join button")
	assert.True(t, act(tk, chromedp.Evaluate[bool](`document.getElementById('access-code-field').hidden`)), "no code field before the sale asks")
	tk.click("#join-button")
	tk.wait(`!document.getElementById('access-code-field').hidden`, "the access code field")
	assert.Equal(t, "This sale needs an access code. Enter the code you received.", tk.text("#join-error"))
	act(tk, chromedp.SetValue(chromedp.CSS("#access-code"), "WRONG-1"))
	tk.click("#join-button")
	tk.wait(`document.getElementById('join-error').textContent.startsWith('That access code')`, "the wrong code refused")
	act(tk, chromedp.SetValue(chromedp.CSS("#access-code"), code))
	tk.click("#join-button")
	tk.wait(lineStatus+` === 'WAITING' && `+position+` === '3'`, "fan K in line with the code")
}
