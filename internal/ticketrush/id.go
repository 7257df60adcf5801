package ticketrush

import "crypto/rand"

const idAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// NewID returns a random 12-character id of [a-z0-9] (62 bits): concert and schedule ids are global,
// and random ids keep two databases (or two test runs on one Redis) from ever sharing a key.
func NewID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}
