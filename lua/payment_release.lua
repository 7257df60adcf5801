-- payment_release: undoes step 1 of a payment that was not debited (the balance was short, or the
-- sweeper found a payment a crash left claimed without a debit). The reservation is HELD again until its
-- original expiry, or EXPIRED with its seat AVAILABLE when that has passed.
-- KEYS[1] seats    hash: seat -> state, of the reservation's schedule
-- KEYS[2] holds    zset: member res, score expires (ms)
-- KEYS[3] res      hash: res -> reservation JSON
-- KEYS[4] paying   zset: member res, score claimed at (ms)
-- KEYS[5] uholds   hash: user -> comma list of open reservations
-- KEYS[6] events   stream: the concert's outbox
-- KEYS[7] inv      hash: avail (the seat comes back when the hold has lapsed)
-- ARGV[1] id (the reservation)  ARGV[2] now (ms)
-- Reply: the reservation JSON after the change (unchanged when it was not PAYING)
-- Errors: NOT_FOUND
local seats, holds, res, paying, uholds, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local inv = KEYS[7]
local id, now = ARGV[1], ARGV[2]
--#include open
--#include reservation
local rec, raw = reservation(res, id)
if not rec then
  return redis.error_reply('NOT_FOUND')
end
if rec.status ~= 'PAYING' then
  return raw
end
redis.call('ZREM', paying, id)
redis.call('XADD', events, '*', 'type', 'payment.release', 'res', id, 'user', rec.user, 'at', now)
if rec.expiresAt > tonumber(now) then
  rec.status = 'HELD'
  redis.call('ZADD', holds, rec.expiresAt, id)
  redis.call('HSET', seats, rec.seat, 'H|' .. id .. '|' .. rec.expiresAt)
else
  rec.status = 'EXPIRED'
  redis.call('HDEL', seats, rec.seat)
  redis.call('HINCRBY', inv, 'avail', 1)
  drop_open(uholds, rec.user, id)
  redis.call('XADD', events, '*', 'type', 'hold.lapse', 'res', id, 'user', rec.user, 'schedule', rec.schedule,
    'seat', rec.seat, 'at', now)
end
raw = cjson.encode(rec)
redis.call('HSET', res, id, raw)
return raw
