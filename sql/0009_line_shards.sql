-- A concert's line may be spread over several Redis slots (queue.lineShards, docs/scaleout.md), fixed
-- when the concert is created. Concerts created before keep one slot: their line is where it was.
ALTER TABLE concerts ADD COLUMN line_shards integer NOT NULL DEFAULT 1 CHECK (line_shards BETWEEN 1 AND 1024);
