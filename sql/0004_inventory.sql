-- Inventory (API.md v2): the admission tick may tie the ACTIVE count to the seats still AVAILABLE.
-- 0 turns it off, as in v1.
ALTER TABLE concerts ADD COLUMN active_per_seat integer NOT NULL DEFAULT 0 CHECK (active_per_seat >= 0);
