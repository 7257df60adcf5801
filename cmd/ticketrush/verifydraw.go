package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/draw"
)

var verifyDrawHelp = help{"ticketrush verify-draw --concert ID [--user U] [--addr URL]", `Checks a concert's on-sale draw as any fan can, trusting nothing but the two public endpoints of
the service at --addr: GET /v1/concerts/{id}/draw and /draw/keys. It checks that the published seed
hashes (SHA-256) to the commitment, that the keys file is sorted, has "entrants" lines and hashes to
"entrantsDigest", and, with --user, that the user's key is HMAC-SHA256(seed, "<concert>:<user>") and is
in the file; it prints each check and the user's place, and exits 1 when any check fails.`}

func verifyDraw(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("verify-draw", flag.ContinueOnError)
	addr := fs.String("addr", defaultAddr(getenv), "base URL of the running service; the default follows HTTP_ADDR")
	concert := fs.String("concert", "", "the concert id; required")
	user := fs.String("user", "", "a user id whose key and place to check")
	if ok, err := parse(fs, args, stdout, verifyDrawHelp); !ok {
		return err
	}
	if *concert == "" {
		return required(fs, "concert", verifyDrawHelp)
	}
	base := strings.TrimRight(*addr, "/") + "/v1/concerts/" + *concert + "/draw"
	client := &http.Client{Timeout: 5 * time.Minute}

	var pub struct {
		Status         string  `json:"status"`
		Commitment     *string `json:"commitment"`
		Seed           *string `json:"seed"`
		Entrants       *int    `json:"entrants"`
		EntrantsDigest *string `json:"entrantsDigest"`
	}
	body, err := fetch(ctx, client, base)
	if err != nil {
		return err
	}
	err = json.NewDecoder(body).Decode(&pub)
	body.Close()
	if err != nil {
		return fmt.Errorf("verify-draw: read the draw: %w", err)
	}
	if pub.Status != "DRAWN" || pub.Seed == nil || pub.Commitment == nil || pub.Entrants == nil || pub.EntrantsDigest == nil {
		return fmt.Errorf("verify-draw: the draw of %s is %s, not DRAWN: nothing to check yet", *concert, pub.Status)
	}
	keys, err := fetch(ctx, client, base+"/keys")
	if err != nil {
		return err
	}
	defer keys.Close()
	v, err := draw.Verify(draw.Published{ConcertID: *concert, Commitment: *pub.Commitment, Seed: *pub.Seed,
		Entrants: *pub.Entrants, EntrantsDigest: *pub.EntrantsDigest}, keys, *user)
	if err != nil {
		return fmt.Errorf("verify-draw: %w", err)
	}
	for _, c := range v.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(stdout, "%s %s\n", mark, c.What)
	}
	if *user != "" && v.Place > 0 {
		fmt.Fprintf(stdout, "user %s: key %s, place %d of %d\n", *user, v.Key, v.Place, *pub.Entrants)
	}
	if err := v.Err(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "the draw checks out")
	return nil
}

// fetch GETs url and returns its body, or an error for any status but 200.
func fetch(ctx context.Context, client *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("verify-draw: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		return nil, errors.New("verify-draw: GET " + url + ": " + res.Status + ": " + string(b))
	}
	return res.Body, nil
}
