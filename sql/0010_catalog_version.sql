-- The catalog's version: one number that every change of what an instance's catalog holds (concerts,
-- their sections, schedules and sale) moves. Each instance re-reads the catalog every 2 s; it reads
-- this number first and the catalog only when it moved, so that an idle service does not load every
-- concert every 2 s (internal/catalog Refresh).
CREATE TABLE catalog_version (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    v   bigint  NOT NULL
);
INSERT INTO catalog_version (one, v) VALUES (true, 0);

CREATE FUNCTION catalog_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog_version SET v = v + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER concerts_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON concerts
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER sections_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON sections
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER schedules_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON schedules
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
CREATE TRIGGER concert_sales_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON concert_sales
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_changed();
