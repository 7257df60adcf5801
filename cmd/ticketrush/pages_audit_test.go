package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The pages' accessibility audit and the fan's language, for the browser tests.

// axeFile is axe-core as web/package-lock.json pins it, installed by `npm ci` in web/ (scripts/chromium.sh,
// which make test runs).
var axeFile = filepath.Join("..", "..", "web", "node_modules", "axe-core", "axe.min.js")

var axeSource = sync.OnceValues(func() ([]byte, error) { return os.ReadFile(axeFile) })

// axe reads axe-core or fails the test saying how to install it.
func axe(t *testing.T) string {
	t.Helper()
	src, err := axeSource()
	if err != nil {
		t.Fatalf("axe-core is missing (%v): the browser tests audit every page state with it. Install it with "+
			"`cd web && npm ci` (make test does it through scripts/chromium.sh)", err)
	}
	return string(src)
}

// tabIn opens a page like tab, as a browser whose languages are accept (navigator.languages, the
// Accept-Language header) and whose locale is the first of them: "ko-KR,ko" is a Korean fan's browser.
func (b *browser) tabIn(t *testing.T, name string, width, height int64, accept string) *tab {
	t.Helper()
	tb := b.tab(t, name, width, height)
	tb.speak(accept)
	return tb
}

// speak makes the tab's browser one whose languages are accept.
func (tb *tab) speak(accept string) {
	tb.t.Helper()
	ua := act(tb, chromedp.Evaluate[string](`navigator.userAgent`))
	first := strings.Split(accept, ",")[0]
	// The DevTools commands by name: go.mod keeps chromedp's protocol package an indirect dependency.
	act(tb, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if err := tg.Call(ctx, "Emulation.setUserAgentOverride", map[string]string{"userAgent": ua, "acceptLanguage": accept}, nil); err != nil {
			return err
		}
		return tg.Call(ctx, "Emulation.setLocaleOverride", map[string]string{"locale": strings.ReplaceAll(first, "-", "_")}, nil)
	}))
}

// violation is one axe-core finding, as the failure message shows it.
type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// audit runs axe-core (WCAG 2 A and AA, and its best practices) on the page as it is now and fails the
// test on any violation; state names the page state for the message.
func (tb *tab) audit(state string) {
	tb.t.Helper()
	if !act(tb, chromedp.Evaluate[bool](`typeof window.axe === 'object'`)) {
		act(tb, chromedp.Evaluate[chromedp.Void](axe(tb.t)))
	}
	out := act(tb, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(
		r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary.replace(/\s+/g, ' '))}))))`, chromedp.EvalAwaitPromise))
	var found []violation
	require.NoError(tb.t, json.Unmarshal([]byte(out), &found))
	for _, v := range found {
		tb.t.Errorf("%s, %s: axe-core %s (%s): %s\n\t%s", tb.name, state, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n\t"))
	}
}

// inView reports whether the element of css is inside the window (below the page's sticky clock).
func inView(tb *tab, css string) bool {
	tb.t.Helper()
	return act(tb, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const r = document.querySelector(%q).getBoundingClientRect();
		const clock = document.getElementById('clock'), bar = clock.hidden ? 0 : Math.max(0, clock.getBoundingClientRect().bottom);
		return r.height > 0 && r.top >= bar - 1 && r.bottom <= window.innerHeight + 1;
	})()`, css)))
}

// allowNotifications grants the tab's origin the permission to show notifications, as a fan who
// clicked "allow" when the page asked.
func (tb *tab) allowNotifications(origin string) {
	tb.t.Helper()
	c := chromedp.FromContext(tb.ctx)
	ctx, cancel := context.WithTimeout(tb.ctx, pageWait)
	defer cancel()
	err := c.Browser.Call(ctx, "Browser.setPermission", map[string]any{
		"permission": map[string]string{"name": "notifications"}, "setting": "granted",
		"origin": origin, "browserContextId": c.BrowserContextID}, nil)
	require.NoError(tb.t, err, "grant notifications to %s", origin)
}
