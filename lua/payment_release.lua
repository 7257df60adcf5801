-- payment_release: undoes step 1 of a payment that was not debited (the balance was short, or the
-- sweeper found a payment a crash left claimed without a debit). The reservation is HELD again until its
-- original expiry, or EXPIRED with its seat AVAILABLE when that has passed.
-- KEYS[1] seats    hash: seat -> state, of the reservation's schedule
-- KEYS[2] holds    zset: member res, score expires (ms)
-- KEYS[3] res      hash: res -> reservation JSON
-- KEYS[4] paying   zset: member res, score claimed at (ms)
-- KEYS[5] events   stream: the concert's outbox
-- KEYS[6] inv      hash: avail (the seat comes back when the hold has lapsed)
-- KEYS[7] ugate    hash: user -> comma list of '<res>:<until ms>' (the concert's gate entries); this key
--                  and the four after it are given when the schedule's seat slot is the concert's own:
--                  the fan's entry then follows the step in this call (lib/follow.lua), as gate_apply's follow
--                  does after it otherwise
-- KEYS[8] active   zset: member user, score activeUntil (ms)
-- KEYS[9] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[10] done     set: seqs whose fan finished
-- KEYS[11] cevents stream: the concert's outbox
-- ARGV[1] id (the reservation)  ARGV[2] now (ms)
-- ARGV[3] payms (ms: how long a claim keeps the fan's entry counting, PayingGate)
-- Reply: the reservation JSON after the change (unchanged when it was not PAYING)
-- Errors: NOT_FOUND
local seats, holds, res, paying, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local inv = KEYS[6]
local id, now = ARGV[1], ARGV[2]
local ugate, active, aseq, done, cevents = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local payms = tonumber(ARGV[3])
--#include reservation
local function step()
  local rec, raw = reservation(res, id)
  if not rec then
    return redis.error_reply('NOT_FOUND')
  end
  if rec.status ~= 'PAYING' then
    return raw, rec
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
    redis.call('XADD', events, '*', 'type', 'hold.lapse', 'res', id, 'user', rec.user, 'schedule', rec.schedule,
      'seat', rec.seat, 'at', now)
  end
  raw = cjson.encode(rec)
  redis.call('HSET', res, id, raw)
  return raw, rec
end
--#include follow
return followed(ugate, active, aseq, done, cevents, now, payms, step())
