-- The on-sale (docs/api.md, "On-sale"): a concert's scheduled opening and the secret seed of its draw,
-- written with the catalog; the pre-queue's entries, the draw and every entrant's place, written by the
-- write-behind worker from the concert's outbox (events queue.prequeue, draw.place, draw.done), so that
-- the draw can be audited after Redis is gone.

-- One row per concert with a sale. The seed is secret until the draw: no API reads this table before
-- drawn_at is set (the draw's row below).
CREATE TABLE concert_sales (
    concert_id        text        PRIMARY KEY REFERENCES concerts (id),
    opens_at          timestamptz NOT NULL,
    prequeue_opens_at timestamptz NOT NULL,
    seed              bytea       NOT NULL CHECK (length(seed) = 32),
    CHECK (prequeue_opens_at <= opens_at)
);

-- One row per entrant of a pre-queue (queue.prequeue; a queue.unprequeue removes it), kept so that
-- restore can rebuild a pre-queue not yet drawn. (ev_ms, ev_seq) is the entry's event: a leave removes
-- only an entry older than itself, whatever order the events are written in.
CREATE TABLE prequeue_entries (
    concert_id text        NOT NULL REFERENCES concerts (id),
    user_id    text        NOT NULL,
    entered_at timestamptz NOT NULL,
    ev_ms      bigint      NOT NULL,
    ev_seq     bigint      NOT NULL,
    PRIMARY KEY (concert_id, user_id)
);

-- Every entrant's place in the draw (draw.place): 1 is the smallest key.
CREATE TABLE draw_places (
    concert_id text    NOT NULL REFERENCES concerts (id),
    place      integer NOT NULL CHECK (place > 0),
    user_id    text    NOT NULL,
    PRIMARY KEY (concert_id, place),
    UNIQUE (concert_id, user_id)
);

-- The draw itself (draw.done): the seed it was keyed with, the count and the digest of the keys file.
CREATE TABLE draws (
    concert_id      text        PRIMARY KEY REFERENCES concerts (id),
    seed            bytea       NOT NULL CHECK (length(seed) = 32),
    entrants        integer     NOT NULL CHECK (entrants >= 0),
    entrants_digest text        NOT NULL,
    drawn_at        timestamptz NOT NULL
);
