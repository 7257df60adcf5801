package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPagesInEachLanguage walks a fan through every state of the page, once as a Korean browser and once
// as an English one: the concert list, the pre-queue, the line with its progress, the turn, the seat
// map, a hold and a refused payment, the receipt, and a sold-out line. Each state is audited with
// axe-core and, under make screenshots, saved as docs/screenshots/fan-<state>-<ko|en>.png.
func TestPagesInEachLanguage(t *testing.T) {
	br := newBrowser(t)
	svc := startService(t, nil)
	next := newNextAPI(t, svc)
	n := next.Config.Handler.(*nextAPI)

	tests := []struct {
		lang, accept string
		// the words each state must show in this language
		concerts, prequeueUnit, status2, soon, turnTitle, refusal, paid, soldOut string
	}{
		{
			lang: "ko", accept: "ko-KR,ko",
			concerts: "공연", prequeueUnit: "분", status2: "대기 순서 25번입니다.", soon: "1분 이내",
			turnTitle: `^내 차례: \d+:\d\d 남음$`,
			refusal:   "포인트가 부족합니다. 포인트를 충전한 뒤 결제하세요.",
			paid:      "143,000포인트", soldOut: "매진: 이 공연의 모든 좌석이 팔렸습니다.",
		},
		{
			lang: "en", accept: "en-US,en",
			concerts: "Concerts", prequeueUnit: "min", status2: "You are number 25 in line.", soon: "less than a minute",
			turnTitle: `^Your turn: \d+:\d\d left$`,
			refusal:   "You do not have enough points. Charge points, then pay.",
			paid:      "143,000 points", soldOut: "Sold out: every seat of this concert is sold.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			n.rewrite.Store(nil)
			id := svc.pageConcert(t, "IU 2026 "+tt.lang, map[string]any{"activeCapacity": 1})
			y, f := buyer(t, "lang-y-"+tt.lang), buyer(t, "lang-f-"+tt.lang)
			yToken := svc.admitted(t, y, id)

			tf := br.tabIn(t, "fan-"+tt.lang, 1000, 900, tt.accept)
			tf.navigate(next.URL + "/#token=" + f.jwt)
			tf.wait(`document.querySelectorAll('#concert-list a').length > 0`, "the concert list")
			assert.Equal(t, tt.lang, tf.eval(`document.documentElement.lang`), "lang follows navigator.languages")
			assert.Equal(t, tt.concerts, tf.text("#concerts-h"))
			assert.Equal(t, tt.lang, tf.eval(`document.getElementById('lang').value`), "the switch shows the language")
			tf.audit("the concert list")
			tf.shot("fan-concerts-" + tt.lang)

			// The pre-queue: the countdown in the fan's words, the opening in the venue's time zone.
			tf.navigate(next.URL + "/concerts/" + id)
			tf.wait(joinShown, "the join button")
			tf.audit("the concert before joining")
			opens := time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
			n.rewrite.Store(&map[string]any{"status": "PREQUEUE", "position": 0, "opensAt": opens})
			tf.click("#join-button")
			tf.wait(lineStatus+` === 'PREQUEUE' && !document.getElementById('prequeue').hidden && document.getElementById('opens-in').textContent !== ''`, "the pre-queue")
			assert.Contains(t, tf.text("#opens-in"), tt.prequeueUnit)
			assert.Contains(t, tf.text("#opens-text"), "GMT+9", "the opening's time names the venue's time zone")
			tf.audit("the pre-queue")
			tf.shot("fan-prequeue-" + tt.lang)

			// The line: drawn at place 40, then at 25; the bar shows the 15 places come since joining,
			// and the estimate comes from the measured admission rate.
			n.rewrite.Store(&map[string]any{"status": "WAITING", "position": 40, "drawKey": "00c0ffee"})
			tf.wait(lineStatus+` === 'WAITING' && `+position+` === '40'`, "place 40")
			n.rewrite.Store(&map[string]any{"status": "WAITING", "position": 25, "drawKey": "00c0ffee"})
			tf.wait(position+` === '25'`, "place 25")
			assert.Equal(t, "15 / 40", tf.eval(`(p => p.value + ' / ' + p.max)(document.getElementById('progress'))`), "the progress bar")
			assert.Equal(t, tt.status2, tf.text("#status"))
			assert.Equal(t, tt.soon, tf.text("#wait"), "15 places in a moment: 25 more take less than a minute")
			tf.audit("the line")
			tf.shot("fan-waiting-" + tt.lang)

			// The turn: the title, focus on the dates, the time left in the bar at the top, a sound, and a
			// system notification once the fan allowed them.
			tf.allowNotifications(next.URL)
			tf.wait(`Notification.permission === 'granted'`, "notifications allowed")
			n.rewrite.Store(nil)
			svc.leave(t, y, yToken)
			tf.wait(lineStatus+` === 'ACTIVE' && document.activeElement?.closest('#dates') !== null`, "the turn, with focus on the dates")
			assert.Regexp(t, regexp.MustCompile(tt.turnTitle), tf.eval(`document.title`))
			assert.True(t, act(tf, chromedp.Evaluate[bool](`!document.getElementById('clock-turn').hidden`)), "the time left at the top")
			assert.Equal(t, "true", tf.eval(`document.getElementById('line').dataset.chimed || ''`), "a sound at the turn")
			assert.Equal(t, "true", tf.eval(`document.getElementById('line').dataset.notified || ''`), "a notification at the turn")
			tf.wait(`document.querySelectorAll('#seatmap [data-seat]').length === 8`, "the seat map")
			tf.audit("the turn and the seat map")
			tf.shot("fan-turn-" + tt.lang)

			// A hold: the view and focus go to "your seat"; a payment without points is refused beside Pay.
			tf.click(`[data-seat="R-1"]`)
			tf.wait(`document.activeElement?.id === 'hold-h' && document.querySelector('[data-seat="R-1"]').classList.contains('s-MINE')`, "focus on the hold")
			tf.wait(`document.getElementById('balance').dataset.value === '0'`, "the balance")
			tf.click("#pay")
			tf.wait(`!document.getElementById('pay-error').hidden`, "the refusal beside Pay")
			assert.Equal(t, tt.refusal, tf.text("#pay-error"))
			assert.Equal(t, tt.refusal, tf.text("#announce"), "the refusal is said")
			tf.audit("the hold with a refused payment")
			tf.shot("fan-hold-" + tt.lang)

			act(tf, chromedp.SetValue(chromedp.CSS("#amount"), "143000"))
			tf.click("#charge")
			tf.wait(`document.getElementById('balance').dataset.value === '143000' && document.getElementById('pay-error').hidden`, "the charged balance")
			tf.click("#pay")
			tf.wait(`!document.getElementById('receipt').hidden && document.activeElement?.id === 'receipt-h'`, "the receipt, focused")
			tf.wait(lineStatus+` === 'DONE'`, "the line done")
			assert.Contains(t, tf.text("#receipt"), tt.paid)
			assert.Contains(t, tf.text("#receipt"), "GMT+9", "the receipt's times name the venue's time zone")
			assert.True(t, act(tf, chromedp.Evaluate[bool](`document.getElementById('checked').hidden`)), "no line clock on the receipt")
			tf.audit("the receipt")
			tf.shot("fan-receipt-" + tt.lang)

			// Sold out, on a phone: said in words. z takes the slot, so that g waits and hears it.
			z, g := buyer(t, "lang-z-"+tt.lang), buyer(t, "lang-g-"+tt.lang)
			svc.admitted(t, z, id)
			tg := br.tabIn(t, "fan-soldout-"+tt.lang, 360, 740, tt.accept)
			tg.navigate(next.URL + "/concerts/" + id + "#token=" + g.jwt)
			tg.wait(joinShown, "the join button")
			n.rewrite.Store(&map[string]any{"status": "SOLD_OUT", "position": 0})
			tg.click("#join-button")
			tg.wait(lineStatus+` === 'SOLD_OUT'`, "the sold-out status")
			assert.Equal(t, tt.soldOut, tg.text("#status"))
			assert.True(t, tg.fits(), "the sold-out page scrolls sideways at 360 px")
			tg.audit("sold out")
			tg.shot("fan-soldout-" + tt.lang)
			n.rewrite.Store(nil)
		})
	}
}

// TestPagesLanguageSwitch: the switch on the page changes every word and the document's lang at once,
// and is remembered over the browser's languages on the next visit.
func TestPagesLanguageSwitch(t *testing.T) {
	br := newBrowser(t)
	svc := startService(t, nil)
	id := svc.pageConcert(t, "Switch test", map[string]any{"activeCapacity": 1})
	y, f := buyer(t, "switch-y"), buyer(t, "switch-f")
	svc.admitted(t, y, id)

	tf := br.tabIn(t, "fan-switch", 1000, 900, "en-US,en")
	tf.navigate(svc.url + "/concerts/" + id + "#token=" + f.jwt)
	tf.wait(joinShown, "the join button")
	assert.Equal(t, "Join the line", tf.text("#join-button"))
	tf.click("#join-button")
	tf.wait(lineStatus+` === 'WAITING' && `+position+` === '1'`, "place 1")
	assert.Equal(t, "You are next in line.", tf.text("#status"))

	act(tf, chromedp.SetValue(chromedp.CSS("#lang"), "ko"))
	act(tf, chromedp.Evaluate[chromedp.Void](`document.getElementById('lang').dispatchEvent(new Event('change'))`))
	tf.wait(`document.documentElement.lang === 'ko'`, "the page in Korean")
	assert.Equal(t, "다음 순서입니다.", tf.text("#status"))
	assert.Equal(t, "내 순서", tf.text("#waiting-box dt"))
	assert.Equal(t, "대기열에서 나가기", tf.text("#leave"))
	for _, english := range []string{"line", "place", "Leave", "Estimated"} {
		assert.NotContains(t, tf.eval(`document.getElementById('main').innerText`), english, "English left on the Korean page")
	}

	// The next visit, in an English browser: the fan's choice wins.
	tf.navigate(svc.url + "/concerts/" + id)
	tf.wait(lineStatus+` === 'WAITING'`, "the line after a reload")
	assert.Equal(t, "ko", tf.eval(`document.documentElement.lang`))
	assert.Equal(t, "다음 순서입니다.", tf.text("#status"))
}

// TestPagesCatalogues: every catalogue has every key of the others and words for every problem code
// of docs/api.md, so that no fan meets a key or a code instead of words.
func TestPagesCatalogues(t *testing.T) {
	br := newBrowser(t)
	svc := startService(t, nil)
	tb := br.tab(t, "catalogues", 800, 600)
	tb.navigate(svc.url + "/")
	tb.wait(`typeof window.TICKETRUSH_I18N === 'object'`, "the catalogues")

	// The sign-in, with a token that is not one: refused beside the box, and audited.
	tb.wait(`!document.getElementById('signin').hidden`, "the sign-in form")
	act(tb, chromedp.SetValue(chromedp.CSS("#jwt"), "not-a-token"))
	tb.click(`#signin-form button[type=submit]`)
	tb.wait(`!document.getElementById('signin-error').hidden`, "the refusal beside the box")
	assert.Equal(t, "That does not look like a valid sign-in token.", tb.text("#signin-error"))
	tb.audit("the sign-in with a refused token")
	missing := tb.eval(`(() => {
		const c = window.TICKETRUSH_I18N, langs = Object.keys(c), out = [];
		const keys = new Set(langs.flatMap(l => Object.keys(c[l])));
		for (const l of langs) for (const k of keys) if (!(k in c[l])) out.push(l + ': ' + k);
		return out.join(', ');
	})()`)
	assert.Empty(t, missing, "keys missing from a catalogue")
	assert.Equal(t, "en,ko", tb.eval(`Object.keys(window.TICKETRUSH_I18N).sort().join()`))

	codes := apiErrorCodes(t)
	require.NotEmpty(t, codes)
	for _, lang := range []string{"ko", "en"} {
		for _, code := range append(codes, "NETWORK", "INTERNAL") {
			words := tb.eval(fmt.Sprintf(`window.TICKETRUSH_I18N[%q][%q] || ''`, lang, "err."+code))
			assert.True(t, len([]rune(words)) >= 8 && !strings.Contains(words, code), "%s has no words for %s (%q)", lang, code, words)
		}
	}
}

// apiErrorCodes are the problem codes of docs/api.md's table of errors.
func apiErrorCodes(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "\n## Errors\n")
	require.True(t, ok, "docs/api.md has no Errors section")
	var codes []string
	for _, m := range regexp.MustCompile("(?m)^\\| \\d{3} \\| `([A-Z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		codes = append(codes, m[1])
	}
	return codes
}

// TestPagesHoldFarDownTheMap: a fan on a phone holds the last of 420 seats, far down the map; the view
// and focus go up to "your seat", the time left stays at the top, and a refused payment is brought
// into view beside Pay.
func TestPagesHoldFarDownTheMap(t *testing.T) {
	br := newBrowser(t)
	svc := startService(t, nil)
	res := svc.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": "Big hall", "venue": "KSPO Dome", "schedules": []string{"2026-12-24T10:00:00Z"},
		"sections": []map[string]any{{"name": "VIP", "price": 165000, "seats": 20}, {"name": "R", "price": 143000, "seats": 400}},
	}})
	require.Equal(t, 201, res.status, "create concert: %s", res.body)
	var c concertJSON
	require.NoError(t, json.Unmarshal(res.body, &c))
	f := buyer(t, "far-down")

	tf := br.tab(t, "fan-far-down", 360, 740)
	tf.navigate(svc.url + "/concerts/" + c.ID + "#token=" + f.jwt)
	tf.wait(joinShown, "the join button")
	tf.click("#join-button")
	tf.wait(`document.querySelectorAll('#seatmap [data-seat]').length === 420`, "the seat map of 420 seats")
	act(tf, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-seat="R-400"]').scrollIntoView()`))
	tf.click(`[data-seat="R-400"]`)
	tf.wait(`document.activeElement?.id === 'hold-h'`, "focus on the hold")
	assert.True(t, inView(tf, "#hold-h"), "the hold's heading is in view after the hold")
	assert.Contains(t, tf.text("#hold-seat"), "Section R, seat 400,")
	assert.True(t, act(tf, chromedp.Evaluate[bool](`!document.getElementById('clock-hold').hidden && !document.getElementById('clock-turn').hidden`)),
		"the turn's and the hold's time left at the top")
	tf.wait(`document.getElementById('balance').dataset.value === '0'`, "the balance")
	// The fan scrolls down the map again, and pays from there (a keyboard's Enter on the focused button).
	act(tf, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`))
	require.False(t, inView(tf, "#pay"), "Pay is out of view")
	assert.True(t, atTop(tf, "#clock"), "the time left stays at the top of the window")
	act(tf, chromedp.Evaluate[chromedp.Void](`document.getElementById('pay').click()`))
	tf.wait(`!document.getElementById('pay-error').hidden`, "the refusal beside Pay")
	assert.True(t, inView(tf, "#pay-error"), "the refusal is brought into view")
	assert.True(t, atTop(tf, "#clock"), "the time left stays at the top of the window")
	tf.audit("a hold far down a big map, with a refused payment")
}

// atTop reports whether the element of css is shown at the top of the window.
func atTop(tb *tab, css string) bool {
	tb.t.Helper()
	return act(tb, chromedp.Evaluate[bool](fmt.Sprintf(`(e => !e.hidden && Math.abs(e.getBoundingClientRect().top) < 2)(document.querySelector(%q))`, css)))
}
