package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The pass keys' schedule (docs/pass.md, "Rotation"). A rotated key is published PassPublishLead before
// it signs: every instance has loaded it (PassKeyReload) and every key set a verifier caches
// (PassKeySetAge) lists it by then. A key stays published PassTTL+PassClockSkew after it stops signing;
// `ticketrush pass rotate` deletes keys that stopped signing MaxPassTTL+PassClockSkew ago.
const (
	PassKeyReload   = 10 * time.Second
	PassKeySetAge   = 60 * time.Second
	PassPublishLead = 5 * time.Minute
	PassClockSkew   = 30 * time.Second
	MinPassTTL      = 10 * time.Second
	MaxPassTTL      = time.Hour
)

// passTTL parses PASS_TTL_SECONDS: 300 when unset.
func passTTL(s string) (time.Duration, error) {
	if s == "" {
		return 300 * time.Second, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < int(MinPassTTL/time.Second) || n > int(MaxPassTTL/time.Second) {
		return 0, fmt.Errorf("want whole seconds %d-%d, got %q", int(MinPassTTL/time.Second), int(MaxPassTTL/time.Second), s)
	}
	return time.Duration(n) * time.Second, nil
}

// siteURL checks PASS_SITE_URL: empty, or an absolute http or https URL without a fragment or a pass
// parameter of its own (the page adds the fan's).
func siteURL(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "", fmt.Errorf("want an absolute http or https URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", fmt.Errorf("want an absolute http or https URL, got %q", v)
	case u.Fragment != "" || strings.HasSuffix(v, "#"):
		return "", fmt.Errorf("want a URL without a fragment, got %q", v)
	case u.Query().Has("pass"):
		return "", fmt.Errorf("want a URL without a pass parameter (the page adds the fan's), got %q", v)
	}
	return v, nil
}

// loadPass reads the admission pass's settings into c (docs/pass.md), reporting each bad one to bad.
func (c *Config) loadPass(getenv func(string) string, bad func(name, format string, args ...any)) {
	var err error
	c.PassIssuer = or(getenv("PASS_ISSUER"), "ticketrush")
	if len(c.PassIssuer) > 256 {
		bad("PASS_ISSUER", "want at most 256 bytes, got %d", len(c.PassIssuer))
	}
	if c.PassTTL, err = passTTL(getenv("PASS_TTL_SECONDS")); err != nil {
		bad("PASS_TTL_SECONDS", "%v", err)
	}
	if c.PassSiteURL, err = siteURL(getenv("PASS_SITE_URL")); err != nil {
		bad("PASS_SITE_URL", "%v", err)
	}
}
