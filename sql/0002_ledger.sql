-- The durable record of the sale, written by the write-behind worker from the Redis outbox streams.
--
-- An event is named by its stream and its entry id (ms-seq): (stream, ev_ms, ev_seq). Every event of
-- every stream lands in exactly one home row carrying that id under a primary key, so a redelivered
-- event cannot land twice: the point events in ledger, the reservation events in reservation_events,
-- every other event (queue.*, concert.load, idem.remember) in processed_events. Rows derived from the
-- events (reservations, payments, idempotency_keys, queue_marks) are keyed by their business id.
--
-- Events of one stream may be written out of order (several workers, retries), so nothing here
-- depends on the order of arrival: the newest event (by entry id) decides a reservation's state.

-- The point ledger: append-only, one row per point movement.
CREATE TABLE ledger (
    stream         text        NOT NULL,
    ev_ms          bigint      NOT NULL,
    ev_seq         bigint      NOT NULL,
    id             text        NOT NULL,  -- the charge, payment or refund id
    user_id        text        NOT NULL,
    type           text        NOT NULL CHECK (type IN ('CHARGE', 'PAYMENT', 'REFUND')),
    amount         bigint      NOT NULL CHECK (amount >= 0),
    delta          bigint      NOT NULL GENERATED ALWAYS AS (CASE WHEN type = 'PAYMENT' THEN -amount ELSE amount END) STORED,
    balance_after  bigint      NOT NULL CHECK (balance_after >= 0),
    reservation_id text,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (stream, ev_ms, ev_seq),                 -- one ledger entry per event
    UNIQUE (id),                                         -- one entry per charge, per payment, per refund
    CHECK ((type = 'CHARGE') = (reservation_id IS NULL))
);
-- A user's events all live in their wallet shard's stream, so the entry id orders their history.
CREATE INDEX ledger_user ON ledger (user_id, ev_ms DESC, ev_seq DESC);

-- Reservations as they stand: the newest event (ev_ms, ev_seq) decides the status. Columns only
-- hold.create carries stay null until it arrives.
CREATE TABLE reservations (
    id          text        PRIMARY KEY,
    concert_id  text        NOT NULL REFERENCES concerts (id),
    schedule_id text        NOT NULL REFERENCES schedules (id),
    seat_id     text,
    user_id     text        NOT NULL,
    seq         bigint,                  -- arrival seq of the queue token that held it
    price       bigint      CHECK (price >= 0),
    status      text        NOT NULL CHECK (status IN ('HELD', 'PAYING', 'PAID', 'EXPIRED', 'CANCELLED')),
    expires_at  timestamptz,
    created_at  timestamptz,
    claimed_at  timestamptz,             -- the last payment.claim
    payment_id  text,
    paid_at     timestamptz,
    ev_ms       bigint      NOT NULL,
    ev_seq      bigint      NOT NULL,
    FOREIGN KEY (schedule_id, seat_id) REFERENCES seats (schedule_id, seat_id),
    CHECK (status <> 'PAID' OR (seat_id IS NOT NULL AND payment_id IS NOT NULL AND paid_at IS NOT NULL))
);
-- One seat of one schedule is sold at most once.
CREATE UNIQUE INDEX reservations_one_sale_per_seat ON reservations (schedule_id, seat_id) WHERE status = 'PAID';
CREATE INDEX reservations_concert ON reservations (concert_id);

-- Every state change of every reservation, in the order of its stream.
CREATE TABLE reservation_events (
    stream         text        NOT NULL,
    ev_ms          bigint      NOT NULL,
    ev_seq         bigint      NOT NULL,
    reservation_id text        NOT NULL,
    type           text        NOT NULL,
    status         text        NOT NULL CHECK (status IN ('HELD', 'PAYING', 'PAID', 'EXPIRED', 'CANCELLED')),
    at             timestamptz NOT NULL,
    PRIMARY KEY (stream, ev_ms, ev_seq)
);
CREATE INDEX reservation_events_reservation ON reservation_events (reservation_id, ev_ms, ev_seq);

-- One payment per reservation: the sale that made it PAID.
CREATE TABLE payments (
    id             text        PRIMARY KEY,
    reservation_id text        NOT NULL UNIQUE,
    user_id        text        NOT NULL,
    schedule_id    text        NOT NULL,
    seat_id        text        NOT NULL,
    amount         bigint      NOT NULL CHECK (amount >= 0),
    paid_at        timestamptz NOT NULL
);

-- The events that leave no row of their own.
CREATE TABLE processed_events (
    stream text        NOT NULL,
    ev_ms  bigint      NOT NULL,
    ev_seq bigint      NOT NULL,
    type   text        NOT NULL,
    at     timestamptz NOT NULL,
    PRIMARY KEY (stream, ev_ms, ev_seq)
);

-- Idempotency-Key records, so that restore can bring back those still in their 24 h. The newest record
-- of a (user, key) stands: a key may be used again once its record has lapsed.
CREATE TABLE idempotency_keys (
    user_id     text        NOT NULL,
    key         text        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('charge', 'payment')),
    fingerprint text        NOT NULL,
    ref         text        NOT NULL,  -- the charge id, or the payment id
    created     boolean     NOT NULL,  -- whether the first answer was a creation
    at          timestamptz NOT NULL,
    PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotency_keys_at ON idempotency_keys (at);

-- Per concert, the highest queue arrival seq and leave ordinal ever issued, so that a restored Redis
-- carries on above them (no queue token is ever issued twice).
CREATE TABLE queue_marks (
    concert_id text   PRIMARY KEY REFERENCES concerts (id),
    max_seq    bigint NOT NULL DEFAULT 0,
    max_leave  bigint NOT NULL DEFAULT 0
);

-- Every event written, whatever its home: to ask whether an event made it.
CREATE VIEW written_events AS
    SELECT stream, ev_ms, ev_seq, 'ledger' AS home FROM ledger
    UNION ALL SELECT stream, ev_ms, ev_seq, 'reservation_events' FROM reservation_events
    UNION ALL SELECT stream, ev_ms, ev_seq, 'processed_events' FROM processed_events;
