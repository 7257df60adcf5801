-- The admission pass's signing keys (docs/pass.md): every instance reads them, so every instance signs
-- with the same keys. A key signs from signs_from until the next key's signs_from, and is published in
-- /.well-known/jwks.json from the moment an instance loads it until PASS_TTL_SECONDS after it stopped
-- signing. seed is the Ed25519 private key's 32-byte seed: it never leaves this table.
CREATE TABLE pass_keys (
    kid        text PRIMARY KEY,
    seed       bytea NOT NULL CHECK (length(seed) = 32),
    created_at timestamptz NOT NULL,
    signs_from timestamptz NOT NULL UNIQUE
);
