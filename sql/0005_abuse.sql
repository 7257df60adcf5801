-- Abuse (docs/abuse.md): a concert's proof-of-work difficulty and presale access codes.

ALTER TABLE concerts
    ADD COLUMN join_pow_bits        integer NOT NULL DEFAULT 0 CHECK (join_pow_bits BETWEEN 0 AND 32),
    ADD COLUMN access_code_required boolean NOT NULL DEFAULT false;

-- Presale access codes, stored hashed (hex SHA-256 of the code): the admin endpoint writes a row per code
-- it issues; the write-behind records the first user who joins with a code (the code.claim event);
-- restore loads them back into Redis.
CREATE TABLE access_codes (
    concert_id text        NOT NULL REFERENCES concerts (id),
    code_hash  text        NOT NULL,
    owner      text,                              -- null until a user joins with it
    created_at timestamptz NOT NULL DEFAULT now(),
    claimed_at timestamptz,
    PRIMARY KEY (concert_id, code_hash)
);
