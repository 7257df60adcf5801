-- Closing a sale (docs/api.md, "Admin"): an operator may close a sale. From closes_at on (null: never)
-- joins are refused and, once its last holds and payments are done, the concert costs nothing but its
-- storage.

ALTER TABLE concert_sales
    ADD COLUMN closes_at timestamptz,
    ADD CHECK (closes_at IS NULL OR closes_at > opens_at);
