package config

import (
	"net/url"
	"strconv"
)

// Gate is the configuration of ticketrush gate (docs/gate.md, "Running the gate").
type Gate struct {
	Listen      string   // where the gated site is served
	AdminListen string   // /metrics and /healthz; empty serves none
	Upstream    *url.URL // the site behind the gate
	KeysURL     string   // the key set (JWKS) of the passes
	Concert     string   // the concert a pass must name (aud)
	WaitingRoom string   // where a page request without a valid pass is sent
	Issuer      string   // the iss a pass must carry; empty checks none
	FailOpen    bool     // let through unchecked passes while the key set cannot be fetched
}

// GateVars are the gate's variables, each also a flag of ticketrush gate (the flag wins).
var GateVars = []string{"GATE_LISTEN", "GATE_ADMIN_LISTEN", "GATE_UPSTREAM", "GATE_KEYS_URL", "GATE_CONCERT",
	"GATE_WAITING_ROOM", "GATE_ISSUER", "GATE_FAIL_OPEN"}

// LoadGate reads the gate's settings through get (a variable's value, a flag's when given). Every bad
// setting is reported, one line each.
func LoadGate(get func(string) string) (Gate, error) {
	g := Gate{
		Listen:      or(get("GATE_LISTEN"), "127.0.0.1:8090"),
		AdminListen: or(get("GATE_ADMIN_LISTEN"), "127.0.0.1:9091"),
		KeysURL:     get("GATE_KEYS_URL"),
		Concert:     get("GATE_CONCERT"),
		WaitingRoom: get("GATE_WAITING_ROOM"),
		Issuer:      get("GATE_ISSUER"),
	}
	var errs problems
	bad := errs.bad
	if _, _, err := splitHostPort(g.Listen); err != nil {
		bad("GATE_LISTEN", "want host:port, got %q", g.Listen)
	}
	if g.AdminListen == "off" {
		g.AdminListen = ""
	} else if _, _, err := splitHostPort(g.AdminListen); err != nil {
		bad("GATE_ADMIN_LISTEN", "want host:port or off, got %q", g.AdminListen)
	}
	httpURL := func(name, v string) *url.URL {
		u, err := url.Parse(v)
		if v == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(name, "required, an http:// or https:// URL, got %q", v)
			return nil
		}
		return u
	}
	g.Upstream = httpURL("GATE_UPSTREAM", get("GATE_UPSTREAM"))
	httpURL("GATE_KEYS_URL", g.KeysURL)
	httpURL("GATE_WAITING_ROOM", g.WaitingRoom)
	if g.Concert == "" {
		bad("GATE_CONCERT", "required, the concert id a pass must name")
	}
	if v := get("GATE_FAIL_OPEN"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("GATE_FAIL_OPEN", "want true or false, got %q", v)
		}
		g.FailOpen = b
	}
	if err := errs.err(); err != nil {
		return Gate{}, err
	}
	return g, nil
}
