-- The catalog: written here first (the record), then loaded into Redis.
CREATE TABLE concerts (
    id                 text PRIMARY KEY,
    title              text NOT NULL,
    venue              text NOT NULL,
    active_capacity    integer NOT NULL CHECK (active_capacity > 0),
    admit_per_second   integer NOT NULL CHECK (admit_per_second > 0),
    active_ttl_seconds integer NOT NULL CHECK (active_ttl_seconds > 0),
    hold_ttl_seconds   integer NOT NULL CHECK (hold_ttl_seconds > 0),
    max_holds_per_user integer NOT NULL CHECK (max_holds_per_user > 0),
    paused             boolean NOT NULL DEFAULT false,
    created_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sections (
    concert_id text    NOT NULL REFERENCES concerts (id),
    name       text    NOT NULL,
    price      bigint  NOT NULL CHECK (price >= 0),
    seats      integer NOT NULL CHECK (seats > 0),
    ordinal    integer NOT NULL,
    PRIMARY KEY (concert_id, name)
);

CREATE TABLE schedules (
    id         text PRIMARY KEY,
    concert_id text NOT NULL REFERENCES concerts (id),
    starts_at  timestamptz NOT NULL
);
CREATE INDEX schedules_concert ON schedules (concert_id, starts_at);

CREATE TABLE seats (
    schedule_id text   NOT NULL REFERENCES schedules (id),
    seat_id     text   NOT NULL,
    section     text   NOT NULL,
    price       bigint NOT NULL CHECK (price >= 0),
    PRIMARY KEY (schedule_id, seat_id)
);
