// Package ticketrush holds the domain: the nouns of a ticket sale and the rules that do not depend on
// where state is kept. It imports no adapter; internal/redis, internal/postgres and internal/http speak
// these types.
package ticketrush

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Concert is one tour date set: its schedules share the seat layout given by its sections.
type Concert struct {
	ID        string
	Title     string
	Venue     string
	Schedules []Schedule
	Sections  []Section
	Queue     QueueSettings
	Sale      *Sale // nil: the line is open at once (plain FIFO)
	Placement Placement
}

// Placement is where the live store keeps a concert's seats and line, in the store's own terms (on
// Redis, the seat slots of each schedule and the tags of the line's shards: docs/scaleout.md,
// "Placement"). The store chooses it when the concert is
// created and the record keeps it with the concert, so that a store rebuilt from the record puts every
// seat where every running process looks for it. Recorded is false for a concert whose record has none
// yet (created before placements were recorded) until it is recorded, once.
type Placement struct {
	Slots    string
	Recorded bool
}

// Schedule is one performance of a concert.
type Schedule struct {
	ID       string
	StartsAt time.Time
}

// Section is a price band: every schedule gets Seats seats named "<Name>-<n>" from 1.
type Section struct {
	Name  string
	Price int64
	Seats int
}

// TotalSeats is the number of seats of one schedule.
func (c Concert) TotalSeats() int {
	n := 0
	for _, s := range c.Sections {
		n += s.Seats
	}
	return n
}

// ConcertSummary is what the public concert list shows.
type ConcertSummary struct {
	ID    string
	Title string
	Venue string
}

// QueueSettings are a concert's waiting-room and hold rules.
type QueueSettings struct {
	ActiveCapacity  int
	AdmitPerSecond  int
	ActiveTTL       time.Duration
	HoldTTL         time.Duration
	MaxHoldsPerUser int
	Paused          bool

	JoinPowBits        int           // a join needs a proof of work of this many leading zero bits; 0: none
	AccessCodeRequired bool          // a join needs an access code of the admin endpoint
	ActivePerSeat      int           // > 0: at most ActivePerSeat x the AVAILABLE seats are ACTIVE at once; 0: off
	AbandonAfter       time.Duration // a WAITING fan silent this long is skipped at admission (EXPIRED); 0: off
	NoShow             time.Duration // an ACTIVE fan with no gated call this long after admission is EXPIRED; 0: off
	LineShards         int           // the slots the line is spread over, fixed at creation; 0: the store's default
}

// Arrival is a WAITING fan's place: who, and their arrival seq.
type Arrival struct {
	UserID string
	Seq    uint64
}

// DefaultQueueSettings are the defaults of docs/api.md's admin section.
func DefaultQueueSettings() QueueSettings {
	return QueueSettings{
		ActiveCapacity:  1000,
		AdmitPerSecond:  50,
		ActiveTTL:       1800 * time.Second,
		HoldTTL:         300 * time.Second,
		MaxHoldsPerUser: 4,
		AbandonAfter:    300 * time.Second,
		NoShow:          120 * time.Second,
	}
}

// Limits on settings, so that a typo in an admin call cannot make a sale unusable.
const (
	MaxActiveCapacity   = 10_000_000
	MaxAdmitPerSecond   = 1_000_000
	MaxTTL              = 7 * 24 * time.Hour
	MaxHoldsLimit       = 100
	MaxActivePerSeat    = 1000
	MaxSeatsPerSchedule = 200_000
	MaxSeatsPerConcert  = 1_000_000 // over every schedule: the seat rows one create may write
	MaxSchedules        = 100
	MaxSections         = 50
	MaxSectionPrice     = 10_000_000 // points a seat of a section may cost
	MaxLineShards       = 1024       // the most slots one concert's line is spread over
	MaxPowBits          = 32         // 2^32 hashes: minutes of a fan's phone, the most a sale can ask
)

// Validate reports the first setting out of range.
func (q QueueSettings) Validate() error {
	switch {
	case q.ActiveCapacity < 1 || q.ActiveCapacity > MaxActiveCapacity:
		return Invalidf("activeCapacity must be between 1 and %d", MaxActiveCapacity)
	case q.AdmitPerSecond < 1 || q.AdmitPerSecond > MaxAdmitPerSecond:
		return Invalidf("admitPerSecond must be between 1 and %d", MaxAdmitPerSecond)
	case q.ActiveTTL < time.Second || q.ActiveTTL > MaxTTL:
		return Invalidf("activeTtlSeconds must be between 1 and %d", int(MaxTTL/time.Second))
	case q.HoldTTL < time.Second || q.HoldTTL > MaxTTL:
		return Invalidf("holdTtlSeconds must be between 1 and %d", int(MaxTTL/time.Second))
	case q.MaxHoldsPerUser < 1 || q.MaxHoldsPerUser > MaxHoldsLimit:
		return Invalidf("maxHoldsPerUser must be between 1 and %d", MaxHoldsLimit)
	case q.JoinPowBits < 0 || q.JoinPowBits > MaxPowBits:
		return Invalidf("joinPowBits must be between 0 and %d", MaxPowBits)
	case q.ActivePerSeat < 0 || q.ActivePerSeat > MaxActivePerSeat:
		return Invalidf("activePerSeat must be between 0 and %d", MaxActivePerSeat)
	case q.AbandonAfter < 0 || q.AbandonAfter > MaxTTL || q.AbandonAfter%time.Second != 0:
		return Invalidf("abandonAfterSeconds must be between 0 and %d", int(MaxTTL/time.Second))
	case q.NoShow < 0 || q.NoShow > MaxTTL || q.NoShow%time.Second != 0:
		return Invalidf("noShowSeconds must be between 0 and %d", int(MaxTTL/time.Second))
	case q.LineShards < 0 || q.LineShards > MaxLineShards:
		return Invalidf("lineShards must be between 1 and %d", MaxLineShards)
	}
	return nil
}

// The characters of ids. Every request checks one or more ids, so they are checked against a table,
// byte by byte: a regexp's match cost ten to twenty times as much on the same ids.
var (
	userIDChars  = charsOf("AZ", "az", "09", "__", "--") // [A-Za-z0-9_-]
	sectionChars = charsOf("AZ", "az", "09", "__")       // [A-Za-z0-9_]
	idChars      = charsOf("az", "09")                   // [a-z0-9]
)

// chars is a set of bytes.
type chars [256]bool

// charsOf returns the set of the byte ranges given, each as its first and last byte.
func charsOf(ranges ...string) *chars {
	var c chars
	for _, r := range ranges {
		for b := int(r[0]); b <= int(r[1]); b++ {
			c[b] = true
		}
	}
	return &c
}

// spans reports whether s is 1 to most bytes, each in c.
func (c *chars) spans(s string, most int) bool {
	if len(s) == 0 || len(s) > most {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !c[s[i]] {
			return false
		}
	}
	return true
}

// MaxUserIDLen is the longest user id (docs/api.md); UserIDRule says what a user id is, for error texts.
const MaxUserIDLen = 64

// UserIDRule is what a user id is, as error texts say it.
var UserIDRule = fmt.Sprintf("1-%d chars of [A-Za-z0-9_-]", MaxUserIDLen)

// ValidUserID reports whether id is a user id as docs/api.md defines it: UserIDRule.
func ValidUserID(id string) bool { return userIDChars.spans(id, MaxUserIDLen) }

// ValidID reports whether id can be a concert or schedule id: 1-32 chars of [a-z0-9]. Ids end up inside
// Redis hash tags and queue tokens, so anything else is refused before it reaches either.
func ValidID(id string) bool { return idChars.spans(id, 32) }

// validSection reports whether name can be a section's: 1-16 chars of [A-Za-z0-9_].
func validSection(name string) bool { return sectionChars.spans(name, 16) }

// Validate checks a concert as the admin API receives it.
func (c Concert) Validate() error {
	switch {
	case len(c.Title) == 0 || len(c.Title) > 200:
		return Invalidf("title must be 1-200 characters")
	case len(c.Venue) == 0 || len(c.Venue) > 200:
		return Invalidf("venue must be 1-200 characters")
	case len(c.Schedules) == 0 || len(c.Schedules) > MaxSchedules:
		return Invalidf("schedules must list 1-%d start times", MaxSchedules)
	case len(c.Sections) == 0 || len(c.Sections) > MaxSections:
		return Invalidf("sections must list 1-%d sections", MaxSections)
	case !printable(c.Title) || !printable(c.Venue):
		return Invalidf("title and venue must be UTF-8 text without control characters")
	}
	seen := map[string]bool{}
	for _, s := range c.Sections {
		switch {
		case !validSection(s.Name):
			return Invalidf("section name %q must be 1-16 characters of [A-Za-z0-9_]", s.Name)
		case seen[s.Name]:
			return Invalidf("section %q is listed twice", s.Name)
		case s.Price < 0 || s.Price > MaxSectionPrice:
			return Invalidf("section %q: price must be between 0 and %d", s.Name, MaxSectionPrice)
		case s.Seats < 1 || s.Seats > MaxSeatsPerSchedule: // each bounded, so that the sum cannot overflow
			return Invalidf("section %q: seats must be from 1 to %d", s.Name, MaxSeatsPerSchedule)
		}
		seen[s.Name] = true
	}
	if c.TotalSeats() > MaxSeatsPerSchedule {
		return Invalidf("a schedule may have at most %d seats", MaxSeatsPerSchedule)
	}
	if c.TotalSeats()*len(c.Schedules) > MaxSeatsPerConcert {
		return Invalidf("a concert may have at most %d seats over all its schedules (%d schedules of %d seats asked)",
			MaxSeatsPerConcert, len(c.Schedules), c.TotalSeats())
	}
	return c.Queue.Validate()
}

// printable reports whether s is valid UTF-8 without control characters (Postgres refuses NUL in text).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
