-- The seat's side of a hold (seat_take, seat_hold), in the schedule's seat slot.
-- take_hold(seats, holds, res, events, inv, h, expires, t, now): the hold h ({id, user, seq,
-- schedule, seat, price}) takes its seat until expires (ms, a string): the seat must be free (a hold
-- past its expiry counts as free and is lapsed here). Replies {res, expires, created, lapsed} or the
-- refusal NOT_FOUND (the schedule's seats are not loaded) or SEAT_UNAVAILABLE. Idempotent by id: the
-- reservation written already is replied again.
--#include hold
local function take_hold(seats, holds, res, events, inv, h, expires, t, now)
  if redis.call('HEXISTS', inv, 'seats') == 0 then
    return redis.error_reply('NOT_FOUND')
  end
  local done = redis.call('HGET', res, h.id)
  if done then -- this step again
    local rec = cjson.decode(done)
    return {h.id, rec.expiresAt, rec.createdAt, 0}
  end
  local free, stale = seat_free(seats, res, h.seat, t)
  if not free then
    return redis.error_reply('SEAT_UNAVAILABLE')
  end
  -- a stale hold's gate entry ran out with it
  take_seat(seats, holds, res, events, inv, stale, h, expires, t, now)
  return {h.id, tonumber(expires), t, stale and 1 or 0}
end
