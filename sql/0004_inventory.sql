-- Inventory (docs/api.md, "Inventory, abandonment and no-shows"): the admission tick may tie the ACTIVE
-- count to the seats still AVAILABLE. 0 turns it off.
ALTER TABLE concerts ADD COLUMN active_per_seat integer NOT NULL DEFAULT 0 CHECK (active_per_seat >= 0);
-- Abandonment and no-shows (docs/api.md, same section): a WAITING fan silent for abandon_after_seconds is
-- skipped at admission; an ACTIVE fan with no gated call within no_show_seconds of admission is expired.
-- 0: off.
ALTER TABLE concerts ADD COLUMN abandon_after_seconds integer NOT NULL DEFAULT 300 CHECK (abandon_after_seconds >= 0);
ALTER TABLE concerts ADD COLUMN no_show_seconds integer NOT NULL DEFAULT 120 CHECK (no_show_seconds >= 0);
