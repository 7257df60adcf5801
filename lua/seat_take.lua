-- seat_take: step 2 of a hold of a concert whose seats are spread over slots of their own, on the
-- schedule's slot, once gate_apply reserved the fan's hold: the seat must be free (a hold past its expiry
-- counts as free and is lapsed here); the reservation is written HELD until the expiry gate_apply gave.
-- Idempotent by id: the reservation written already is replied again.
-- KEYS[1] seats    hash: seat -> 'H|<res>|<expires ms>' | 'P|<res>' (being paid) | 'S|<res>' (sold)
-- KEYS[2] holds    zset: member res, score expires (ms): every HELD reservation of the schedule
-- KEYS[3] res      hash: res -> reservation JSON, the schedule's
-- KEYS[4] events   stream: the schedule's outbox
-- KEYS[5] inv      hash: seats, avail (one seat fewer, unless it was another fan's lapsed hold), sold, soldout
-- ARGV[1] user  ARGV[2] seq of the caller's queue token  ARGV[3] schedule  ARGV[4] seat  ARGV[5] price
-- ARGV[6] id (of the new reservation)  ARGV[7] expires (ms, from gate_apply)  ARGV[8] now (ms)
-- Reply: {res, expires (ms), created (ms), lapsed (1 when another fan's expired hold of the seat was lapsed)}
-- Errors: NOT_FOUND (the schedule's seats are not loaded), SEAT_UNAVAILABLE
local seats, holds, res, events, inv = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local user, seq, schedule, seat, price, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local expires, now = ARGV[7], ARGV[8]
--#include take
if redis.call('HEXISTS', inv, 'seats') == 0 then
  return redis.error_reply('NOT_FOUND')
end
local done = redis.call('HGET', res, id)
if done then -- this step again
  local rec = cjson.decode(done)
  return {id, rec.expiresAt, rec.createdAt, 0}
end
return take_hold(seats, holds, res, events, inv,
  {id = id, user = user, seq = seq, schedule = schedule, seat = seat, price = price}, expires, tonumber(now), now)
