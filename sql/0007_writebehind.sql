-- What the write-behind costs Postgres per event. A reservation's events after its hold.create
-- (payment.claim, sale, hold.lapse, hold.cancel) change its status and event id only; with no index on the
-- columns they change and room left on the page, each is a HOT update (no index entry written).

-- A seat of a schedule is sold at most once: held by the payments, which have one row per sale (written
-- with the sale event that makes a reservation PAID), instead of a partial index on reservations whose
-- predicate (status) every event changes.
CREATE UNIQUE INDEX payments_one_per_seat ON payments (schedule_id, seat_id);
DROP INDEX reservations_one_sale_per_seat;
-- Room for the updated versions of a page's reservations on the page itself.
ALTER TABLE reservations SET (fillfactor = 70);

-- The seat's key (schedule_id, seat_id) -> seats already proves the schedule, whose own key proves the
-- concert; the reservation id carries both, and the worker refuses an event whose id is not of its
-- stream's concert. Two of the three checks each hold.create ran were the same check again.
ALTER TABLE reservations DROP CONSTRAINT reservations_concert_id_fkey,
    DROP CONSTRAINT reservations_schedule_id_fkey;

-- No query reads a reservation's history by reservation (ReservationsAt reads a stream's range by the
-- primary key): the index only cost every reservation event an entry.
DROP INDEX reservation_events_reservation;
