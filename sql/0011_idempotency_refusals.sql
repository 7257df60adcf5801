-- An Idempotency-Key whose first request was refused (a payment's balance short, its hold lapsed, a
-- charge past the balance limit) answers every retry with the same refusal: its record keeps the
-- refusal's error code, and no ref. '' for a key whose request acted.
ALTER TABLE idempotency_keys ADD COLUMN refused text NOT NULL DEFAULT '';
