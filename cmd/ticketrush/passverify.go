package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/gate"
)

var passVerifyHelp = help{"ticketrush pass verify [--keys URL] [--concert ID] [--issuer ISS] PASS", `Prints an admission pass's header and claims and checks it as ticketrush gate does (docs/gate.md):
the signature with the key set at --keys (alg EdDSA only), exp, nbf and iat with 5 s of leeway, aud
against --concert and iss against --issuer when given. Exits 1 with the reason (the gate's code and a
sentence) when the pass fails a check or the key set cannot be fetched.`}

func passVerify(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pass verify", flag.ContinueOnError)
	keysURL := fs.String("keys", "", "URL of the key set; the default is GATE_KEYS_URL, else /.well-known/jwks.json at HTTP_ADDR")
	concert := fs.String("concert", "", "the concert the pass must be for; empty prints aud without checking it")
	issuer := fs.String("issuer", "", "the iss the pass must carry; empty checks none")
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return writeHelp(stdout, fs, passVerifyHelp)
	}
	if err == nil && fs.NArg() != 1 {
		err = errors.New("want the pass as the one argument after the flags")
	}
	if err != nil {
		return usageError{fmt.Sprintf("pass verify: %v\nusage: %s (ticketrush pass verify -h for more)", err, passVerifyHelp.synopsis)}
	}
	token := fs.Arg(0)
	if *keysURL == "" {
		*keysURL = getenv("GATE_KEYS_URL")
	}
	if *keysURL == "" {
		*keysURL = strings.TrimRight(defaultAddr(getenv), "/") + "/.well-known/jwks.json"
	}

	fail := func(err error) error {
		var rf *gate.Refusal
		if errors.As(err, &rf) {
			fmt.Fprintf(stdout, "FAIL %s: %s\n", rf.Code, rf.Detail)
		} else {
			fmt.Fprintf(stdout, "FAIL %v\n", err)
		}
		return fmt.Errorf("pass verify: %w", err)
	}
	token = strings.TrimSpace(token)
	h, c, _, _, err := gate.Decode(token)
	if err != nil {
		return fail(err)
	}
	now := time.Now()
	fmt.Fprintf(stdout, "header  alg %s, typ %s, kid %s\n", h.Alg, h.Typ, h.Kid)
	fmt.Fprintf(stdout, "iss     %s\nsub     %s\naud     %s\n", c.Issuer, c.User, c.Concert)
	fmt.Fprintf(stdout, "iat     %s\n", stamp(c.IssuedAt, now))
	if !c.NotBefore.IsZero() {
		fmt.Fprintf(stdout, "nbf     %s\n", stamp(c.NotBefore, now))
	}
	fmt.Fprintf(stdout, "exp     %s\njti     %s\n", stamp(c.Expires, now), c.ID)

	keys := gate.NewKeys(*keysURL, gate.KeysOptions{})
	if _, err := keys.Fetch(ctx); err != nil {
		return fail(err)
	}
	set, _ := keys.Snapshot()
	kids := make([]string, 0, len(set))
	for kid := range set {
		kids = append(kids, kid)
	}
	slices.Sort(kids)
	fmt.Fprintf(stdout, "keys    %s: %s\n", *keysURL, strings.Join(kids, ", "))
	want := *concert
	if want == "" {
		want = c.Concert
		fmt.Fprintln(stdout, "aud not checked (no --concert)")
	}
	if _, err := gate.NewVerifier(keys, want, *issuer).Verify(ctx, token); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "ok      signed by key %s, for concert %s, valid until %s\n", h.Kid, c.Concert, c.Expires.UTC().Format(time.RFC3339))
	return nil
}

// stamp is a NumericDate as RFC 3339 with its distance from now.
func stamp(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	rel := "in " + d.String()
	if d < 0 {
		rel = (-d).String() + " ago"
	}
	return fmt.Sprintf("%s (%d, %s)", t.UTC().Format(time.RFC3339), t.Unix(), rel)
}
