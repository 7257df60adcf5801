// Package config reads the service's environment into a typed Config, with the defaults and rules of
// README.md's configuration table (TestREADMEDocumentsEverySetting). Nothing else in the service reads
// the environment.
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RedisServerArgs are the redis-server settings, beside persistence and noeviction, that the scripts are
// measured with (docs/scaleout.md, "Settings"): a hash or a sorted set of more than 32 entries is kept as
// a table, not as a listpack that every read and write scans entry by entry (Redis keeps hashes of up to
// 512 fields so: a seat's HGET then costs 5 µs instead of 0.8). The private redis-servers of the tests
// and of make bench start with them; scripts/services.sh, scripts/cluster.sh and docker-compose.yml
// pass the same (TestRedisServerArgsEverywhere).
var RedisServerArgs = []string{"--hash-max-listpack-entries", "32", "--zset-max-listpack-entries", "32"}

// MinSecretBytes is the shortest JWT_SECRET and QUEUE_TOKEN_SECRET taken, and the shortest ADMIN_TOKEN
// taken without a warning.
const MinSecretBytes = 32

// The request bounds (docs/faults.md): a request's calls to Redis and Postgres that do not answer
// within RequestTimeout are a 503 UNAVAILABLE with Retry-After; an admin create's and an access-code
// issue's within CreateTimeout. Both well inside Server.Write, so that the answer is still written.
const (
	RequestTimeout = 2 * time.Second
	CreateTimeout  = 10 * time.Second
)

// ServerTimeouts are the HTTP server's own deadlines.
type ServerTimeouts struct{ ReadHeader, Read, Write, Idle time.Duration }

// Server are the api process's server deadlines. An event stream and the draw's keys file outlive all
// of them: their requests have no deadline, and they extend the connection's write deadline at every
// write (internal/http events.go; TestEventStreamOutlivesEveryDeadline holds a stream past the longest,
// TestDrawKeysOutliveTheRequestTimeout a keys file past the request's).
var Server = ServerTimeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 15 * time.Second, Idle: 60 * time.Second}

// ReplicaWait is how long a replicated step (a hold, a payment's steps, a wallet's) waits for a replica
// on a Redis Cluster, and how long the write-behind's reads wait for one: a replica on the same network
// confirms within a millisecond; one that takes longer is treated as lagging (docs/durability.md).
const ReplicaWait = 250 * time.Millisecond

// IdlePace is how often the loops over awake concerts run while none is awake (app.Rounds): a concert
// another instance wakes is found within it; one this instance wakes, at once.
const IdlePace = time.Second

// Roles a process can run.
const (
	RoleAPI         = "api"
	RoleScheduler   = "scheduler"
	RoleWriteBehind = "writebehind"
)

var allRoles = []string{RoleAPI, RoleScheduler, RoleWriteBehind}

// Config is the whole of the service's configuration.
type Config struct {
	HTTPAddr         string
	RedisURL         string
	RedisKeyPrefix   string // every Redis key starts with it; services sharing one Redis need their own
	DatabaseURL      string
	JWTSecret        []byte
	QueueTokenSecret []byte
	AdminToken       string
	Roles            []string

	// Abuse (docs/api.md "Abuse"): per-user request rate and burst (0 turns the limit off), the proxies
	// whose X-Forwarded-For names the client, and the claims a JWT must carry when set.
	UserRateLimit     int
	UserRateBurst     int
	TrustedProxyCIDRs []netip.Prefix
	JWTIssuer         string
	JWTAudience       string

	// The admission pass (docs/pass.md): PASS_ISSUER is its iss, PASS_TTL_SECONDS its longest life.
	PassIssuer string
	PassTTL    time.Duration
	// PASS_SITE_URL: the site the fan page sends an admitted fan on to, with their pass as ?pass= (the
	// site behind `ticketrush gate`, docs/gate.md); empty: the page sends nobody anywhere.
	PassSiteURL string

	// The write-behind worker's batches and reads (docs/durability.md): WRITEBEHIND_WRITERS batches are
	// written at once, of WRITEBEHIND_BATCH_SIZE events at most, one Postgres transaction each; a round
	// reads WRITEBEHIND_READ_COUNT entries of a stream at first, doubling for a stream that filled its read
	// up to WRITEBEHIND_MAX_READ_COUNT; an entry pending WRITEBEHIND_CLAIM_IDLE_SECONDS with another worker
	// (one that crashed) is claimed.
	WriteBehindWriters      int
	WriteBehindBatchSize    int
	WriteBehindReadCount    int
	WriteBehindMaxReadCount int
	WriteBehindClaimIdle    time.Duration

	// Timings that are not in the environment: fixed here so that every instance agrees.
	AdmitTick       time.Duration // how often the scheduler runs the admission tick
	SnapshotRefresh time.Duration // how often an api instance refreshes its per-concert queue view
	LivenessFlush   time.Duration // how often an api instance writes which WAITING fans it saw (per concert)
	// CatalogRefresh is how often an instance reads the catalog's version from Postgres (and the concerts
	// when it moved). docs/api.md: a PATCH of a concert's queue is in force within a second on every instance;
	// what an instance serves from its catalog (a challenge's joinPowBits, the admin view's settings, a
	// concert just created on another instance) follows within this and one read.
	CatalogRefresh time.Duration
	// SweepInterval is how often the scheduler lapses expired holds and recovers stuck payments; a payment
	// left claimed is recovered before its fan's gate entry runs out (TestPayingGateOutlastsStuckPayments).
	SweepInterval   time.Duration
	ShutdownTimeout time.Duration

	// Warnings are settings that work but are unwise; serve logs each at start.
	Warnings []string
}

// Has reports whether the process runs role.
func (c Config) Has(role string) bool { return slices.Contains(c.Roles, role) }

// Load parses the environment. Every bad variable is reported, one line each.
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		HTTPAddr:        or(getenv("HTTP_ADDR"), ":8080"),
		RedisURL:        RedisURL(getenv),
		DatabaseURL:     DatabaseURL(getenv),
		RedisKeyPrefix:  KeyPrefix(getenv),
		AdminToken:      getenv("ADMIN_TOKEN"),
		AdmitTick:       100 * time.Millisecond,
		SnapshotRefresh: 200 * time.Millisecond,
		LivenessFlush:   time.Second,
		CatalogRefresh:  500 * time.Millisecond,
		SweepInterval:   250 * time.Millisecond,
		ShutdownTimeout: 10 * time.Second,
	}
	var errs problems
	bad := errs.bad
	if _, _, err := splitHostPort(c.HTTPAddr); err != nil {
		bad("HTTP_ADDR", "want host:port, got %q", c.HTTPAddr)
	}
	if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		bad("REDIS_URL", "want redis://host:port/db or rediss://..., got %q", Redact(c.RedisURL))
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		bad("DATABASE_URL", "want postgres://user@host:port/db, got a value that does not parse as one")
	}
	if !prefixPattern.MatchString(c.RedisKeyPrefix) {
		bad("REDIS_KEY_PREFIX", "want 1-32 chars of [A-Za-z0-9_-], got %q", c.RedisKeyPrefix)
	}
	c.JWTSecret = []byte(getenv("JWT_SECRET"))
	if len(c.JWTSecret) < MinSecretBytes {
		bad("JWT_SECRET", "required, at least %d bytes (got %d)", MinSecretBytes, len(c.JWTSecret))
	}
	c.QueueTokenSecret = []byte(getenv("QUEUE_TOKEN_SECRET"))
	if len(c.QueueTokenSecret) < MinSecretBytes {
		bad("QUEUE_TOKEN_SECRET", "required, at least %d bytes (got %d)", MinSecretBytes, len(c.QueueTokenSecret))
	}
	// docs/api.md asks only that ADMIN_TOKEN be set (the two secrets, ≥ 32 bytes): a shorter token is
	// accepted, with a warning at start (Warnings).
	switch {
	case c.AdminToken == "":
		bad("ADMIN_TOKEN", "required")
	case len(c.AdminToken) < MinSecretBytes:
		c.Warnings = append(c.Warnings, fmt.Sprintf("ADMIN_TOKEN is %d bytes: a token of at least %d random bytes resists guessing",
			len(c.AdminToken), MinSecretBytes))
	}
	var err error
	if c.UserRateLimit, err = nonNegative(getenv("USER_RATE_LIMIT"), 20); err != nil {
		bad("USER_RATE_LIMIT", "%v", err)
	}
	if c.UserRateBurst, err = nonNegative(getenv("USER_RATE_BURST"), 40); err != nil {
		bad("USER_RATE_BURST", "%v", err)
	}
	if c.UserRateLimit == 0 || c.UserRateBurst == 0 { // docs/api.md: 0 turns it off, either of the two
		c.UserRateLimit, c.UserRateBurst = 0, 0
	}
	if c.TrustedProxyCIDRs, err = parseCIDRs(getenv("TRUSTED_PROXY_CIDRS")); err != nil {
		bad("TRUSTED_PROXY_CIDRS", "%v", err)
	}
	c.JWTIssuer, c.JWTAudience = getenv("JWT_ISSUER"), getenv("JWT_AUDIENCE")
	c.loadPass(getenv, bad)
	c.loadWriteBehind(getenv, bad)
	if c.Roles, err = parseRoles(or(getenv("ROLES"), strings.Join(allRoles, ","))); err != nil {
		bad("ROLES", "%v", err)
	}
	if err := errs.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// problems gathers the bad settings of one read, to report them all at once.
type problems []error

// bad records that setting name is bad, saying why.
func (p *problems) bad(name, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// err reports every bad setting, one line each, or nil when there is none.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("configuration:\n%w", errors.Join(p...))
}

func parseRoles(s string) ([]string, error) {
	var roles []string
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(allRoles, r) {
			return nil, fmt.Errorf("unknown role %q (want some of %s)", r, strings.Join(allRoles, ","))
		}
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("no role given (want some of %s)", strings.Join(allRoles, ","))
	}
	return roles, nil
}

func splitHostPort(addr string) (string, string, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 || i == len(addr)-1 {
		return "", "", errors.New("missing port")
	}
	return addr[:i], addr[i+1:], nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// DatabaseURL reads DATABASE_URL alone, for commands that need nothing else.
func DatabaseURL(getenv func(string) string) string {
	return or(getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/ticketrush?sslmode=disable")
}

// RedisURL reads REDIS_URL alone, for commands that need nothing else.
func RedisURL(getenv func(string) string) string {
	return or(getenv("REDIS_URL"), "redis://127.0.0.1:6379/0")
}

var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// KeyPrefix reads REDIS_KEY_PREFIX alone (default "tr"), for commands that need nothing else.
func KeyPrefix(getenv func(string) string) string { return or(getenv("REDIS_KEY_PREFIX"), "tr") }

// JWTSecret reads JWT_SECRET alone, for the token command.
func JWTSecret(getenv func(string) string) ([]byte, error) {
	s := []byte(getenv("JWT_SECRET"))
	if len(s) < MinSecretBytes {
		return nil, fmt.Errorf("JWT_SECRET: required, at least %d bytes (got %d)", MinSecretBytes, len(s))
	}
	return s, nil
}

// Redact hides the password of a URL (REDIS_URL, DATABASE_URL) before it is printed or logged.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparseable URL)"
	}
	return u.Redacted()
}

// maxSetting is the largest integer a rate or burst setting takes.
const maxSetting = 1_000_000

// nonNegative parses an integer variable of 0-maxSetting, def when unset.
func nonNegative(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxSetting {
		return 0, fmt.Errorf("want an integer 0-%d, got %q", maxSetting, s)
	}
	return n, nil
}

// positive parses an integer variable of 1-most, def when unset.
func positive(s string, def, most int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil || n < 1:
		return 0, fmt.Errorf("want a positive integer, got %q", s)
	case n > most:
		return 0, fmt.Errorf("want a positive integer of at most %d, got %q", most, s)
	}
	return n, nil
}

// parseCIDRs reads a comma-separated list of CIDRs (a bare address is a /32 or /128).
func parseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("want CIDRs such as 10.0.0.0/8, got %q", f)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("want CIDRs such as 10.0.0.0/8, got %q", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
