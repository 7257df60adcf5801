-- Where the live store keeps a concert's seats (on Redis, the seat slot of each schedule, the cfg field
-- sched: docs/scaleout.md, "One concert over every master: seat slots"), chosen when the concert is
-- created and written with it, so that restore puts every seat where the running processes look for it. NULL: not recorded yet (a
-- concert created before this column); each process records it at its start and restore before it
-- writes the concert, once (internal/repair RecordPlacements), and nothing writes over a recorded one.
ALTER TABLE concerts ADD COLUMN seat_slots text;
