-- The events that leave no row of their own (queue.*, draw.*, concert.load, idem.remember and the like),
-- one row per stream for each batch the write-behind writes, their entry ids, types and times in arrays,
-- rather than a row each (processed_events, which keeps the rows it holds): a line's opening writes a
-- join event per fan, and a row each would grow the write-behind's work by an index entry per fan.
-- digest is SHA-256 of the batch's entry ids of the stream (ms-seq, comma-separated, in id order): the
-- same batch written again changes nothing; a redelivery composed otherwise adds a row naming some
-- events again, and written_events counts each event once.
CREATE TABLE processed_batches (
    stream text     NOT NULL,
    digest bytea    NOT NULL,
    ms     bigint[] NOT NULL,
    seqs   bigint[] NOT NULL,
    types  text[]   NOT NULL,
    at     bigint[] NOT NULL, -- Unix ms
    PRIMARY KEY (stream, digest)
);
ALTER TABLE processed_batches ALTER COLUMN ms SET STORAGE EXTERNAL, ALTER COLUMN seqs SET STORAGE EXTERNAL,
    ALTER COLUMN types SET STORAGE EXTERNAL, ALTER COLUMN at SET STORAGE EXTERNAL;

-- Every event written, whatever its home, each once: to ask whether an event made it.
CREATE OR REPLACE VIEW written_events AS
    SELECT stream, ev_ms, ev_seq, 'ledger' AS home FROM ledger
    UNION ALL SELECT stream, ev_ms, ev_seq, 'reservation_events' FROM reservation_events
    UNION ALL SELECT DISTINCT stream, ev_ms, ev_seq, 'processed' FROM (
        SELECT stream, ev_ms, ev_seq FROM processed_events
        UNION ALL SELECT b.stream, e.ev_ms, e.ev_seq FROM processed_batches b, unnest(b.ms, b.seqs) AS e(ev_ms, ev_seq)
    ) p;
