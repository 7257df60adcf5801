package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/pass"
	"github.com/ticketrush/ticketrush/internal/postgres"
)

var passRotateHelp = help{"ticketrush pass rotate", fmt.Sprintf(`Adds a new admission-pass signing key to DATABASE_URL. Every instance publishes it in
/.well-known/jwks.json within %s and signs with it %s after the rotation; the key it replaces stays
published until every pass it signed has expired (docs/pass.md, "Rotation"). Refused while the key of an
earlier rotation does not sign yet. Deletes the keys no live pass can need any more. No flags.`,
	config.PassKeyReload, config.PassPublishLead)}

// passRotate is `ticketrush pass rotate`: it prints the new key's kid and when it signs, never the key.
func passRotate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if ok, err := parse(flag.NewFlagSet("pass rotate", flag.ContinueOnError), args, stdout, passRotateHelp); !ok {
		return err
	}
	db, err := postgres.Open(ctx, config.DatabaseURL(getenv))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return err
	}
	r, err := pass.Rotate(ctx, db, time.Now(), config.PassPublishLead, config.MaxPassTTL+config.PassClockSkew)
	if errors.Is(err, pass.ErrKeyPending) {
		return fmt.Errorf("pass rotate: %w; run it again once that key signs", err)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "added pass key %s: published within %s, signs from %s\n",
		r.Key.ID, config.PassKeyReload, r.Key.SignsFrom.Format(time.RFC3339))
	for _, kid := range r.Deleted {
		if err == nil {
			_, err = fmt.Fprintf(stdout, "deleted pass key %s: no live pass needs it\n", kid)
		}
	}
	return err
}
