-- The seat's side of a hold (seat_take, seat_hold), in the schedule's seat slot.
-- take_hold(seats, holds, res, events, inv, h, expires, t, now): the hold h ({id, user, seq,
-- schedule, seat, price}) takes its seat until expires (ms, a string): the seat must be free (a hold
-- past its expiry counts as free and is lapsed here). Replies {res, expires, created, lapsed} or the
-- refusal SEAT_UNAVAILABLE. seat_take, a step of a chain that may run again, asks first whether it ran
-- already; seat_hold, one call with an id of its own, need not.
--#include hold
local function take_hold(seats, holds, res, events, inv, h, expires, t, now)
  local free, stale = seat_free(seats, res, h.seat, t)
  if not free then
    return redis.error_reply('SEAT_UNAVAILABLE')
  end
  -- a stale hold's gate entry ran out with it
  take_seat(seats, holds, res, events, inv, stale, h, expires, t, now)
  return {h.id, tonumber(expires), t, stale and 1 or 0}
end
