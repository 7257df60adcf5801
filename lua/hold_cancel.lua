-- hold_cancel: the owner gives back a HELD seat before it lapses.
-- KEYS[1] seats    hash: seat -> state, of the reservation's schedule
-- KEYS[2] holds    zset: member res, score expires (ms)
-- KEYS[3] res      hash: res -> reservation JSON
-- KEYS[4] events   stream: the concert's outbox
-- KEYS[5] inv      hash: avail (the seat comes back)
-- KEYS[6] rl       string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- KEYS[7] ugate    hash: user -> comma list of '<res>:<until ms>' (the concert's gate entries); this key
--                  and the four after it are given when the schedule's seat slot is the concert's own:
--                  the fan's entry then follows the step in this call (lib/follow.lua), as gate_apply's follow
--                  does after it otherwise
-- KEYS[8] active   zset: member user, score activeUntil (ms)
-- KEYS[9] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[10] done     set: seqs whose fan finished
-- KEYS[11] cevents stream: the concert's outbox
-- ARGV[1] user  ARGV[2] id (the reservation)  ARGV[3] now (ms)
-- ARGV[4] ulimit (requests/s, 0 = off)  ARGV[5] uburst
-- ARGV[6] payms (ms: how long a claim keeps the fan's entry counting, PayingGate)
-- Reply: the reservation JSON after the change
-- Errors: NOT_FOUND (no such reservation, or not the caller's), RESERVATION_NOT_HELD (not HELD, or lapsed), RATE_LIMITED
local seats, holds, res, events, inv = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local user, id, now = ARGV[1], ARGV[2], ARGV[3]
local rl, ulimit, uburst = KEYS[6], tonumber(ARGV[4]), tonumber(ARGV[5])
local ugate, active, aseq, done, cevents = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local payms = tonumber(ARGV[6])
--#include rate_limit
--#include reservation
local function step()
  if limited(rl, tonumber(now), ulimit, uburst) then
    return redis.error_reply('RATE_LIMITED')
  end
  local rec = own_reservation(res, id, user)
  if not rec then
    return redis.error_reply('NOT_FOUND')
  end
  if rec.status ~= 'HELD' or rec.expiresAt <= tonumber(now) then
    return redis.error_reply('RESERVATION_NOT_HELD')
  end
  rec.status = 'CANCELLED'
  local raw = cjson.encode(rec)
  redis.call('HSET', res, id, raw)
  redis.call('HDEL', seats, rec.seat)
  redis.call('HINCRBY', inv, 'avail', 1)
  redis.call('ZREM', holds, id)
  redis.call('XADD', events, '*', 'type', 'hold.cancel', 'res', id, 'user', user, 'schedule', rec.schedule,
    'seat', rec.seat, 'at', now)
  return raw, rec
end
--#include follow
return followed(ugate, active, aseq, done, cevents, now, payms, step())
