-- seat_hold: an ACTIVE fan holds one seat for holdTtl. The seat must be free (a hold past its expiry
-- counts as free and is lapsed here), and the fan under maxHoldsPerUser open holds in this concert.
-- KEYS[1] cfg      hash: hold (ms), maxholds
-- KEYS[2] places   hash: user -> seq of each fan WAITING in the line
-- KEYS[3] active   zset: member user, score activeUntil (ms)
-- KEYS[4] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[5] seats    hash: seat -> 'H|<res>|<expires ms>' | 'P|<res>' (being paid) | 'S|<res>' (sold), one schedule
-- KEYS[6] holds    zset: member res, score expires (ms): every HELD reservation of the concert
-- KEYS[7] res      hash: res -> reservation JSON
-- KEYS[8] uholds   hash: user -> comma list of the user's open (HELD or being paid) reservations, each
--                  '<res>:<expires ms>' (lib/open.lua)
-- KEYS[9] events   stream: the concert's outbox
-- KEYS[10] paying  zset: member res, score claimed (ms): every reservation being paid (PAYING)
-- KEYS[11] inv     hash: avail (one seat fewer, unless it was another fan's lapsed hold)
-- KEYS[12] noshow  zset: member user: a gated call, so the fan has shown up
-- KEYS[13] rl      string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- ARGV[1] user  ARGV[2] seq of the caller's queue token  ARGV[3] schedule  ARGV[4] seat  ARGV[5] price
-- ARGV[6] id (of the new reservation)  ARGV[7] now (ms)
-- ARGV[8] ulimit (requests/s, 0 = off)  ARGV[9] uburst
-- Reply: {res, expires (ms), created (ms), lapsed (1 when another fan's expired hold of the seat was lapsed)}
-- Errors: NOT_FOUND (no such concert), QUEUE_NOT_ACTIVE (token still WAITING), QUEUE_TOKEN_EXPIRED (token
--         not live), SEAT_UNAVAILABLE, HOLD_LIMIT_REACHED, RATE_LIMITED
local cfg, places, active, aseq, seats = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local holds, res, uholds, events, paying = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local inv, noshow = KEYS[11], KEYS[12]
local user, seq, schedule, seat, price, id, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local rl, ulimit, uburst = KEYS[13], tonumber(ARGV[8]), tonumber(ARGV[9])
local t = tonumber(now)
--#include gated
local conf, refused = gated(cfg, rl, aseq, active, places, noshow, user, seq, t, ulimit, uburst)
if not conf then
  return refused
end

--#include hold
local free, stale = seat_free(seats, res, seat, t)
if not free then
  return redis.error_reply('SEAT_UNAVAILABLE')
end

-- The fan's open holds: HELD and unexpired, or being paid (lib/open.lua: an entry's expiry, or the zsets,
-- tell; no record read).
--#include open
local open = open_holds(uholds, holds, paying, user, t)
if #open >= tonumber(conf[2]) then
  return redis.error_reply('HOLD_LIMIT_REACHED')
end

local expires = t + tonumber(conf[1])
local exp = string.format('%d', expires) -- formatted once: a number in a string costs a %.14g each time
take_seat(seats, holds, res, uholds, events, inv, stale,
  {id = id, user = user, seq = seq, schedule = schedule, seat = seat, price = price}, exp, t, now)
open[#open + 1] = id .. ':' .. exp
redis.call('HSET', uholds, user, table.concat(open, ','))
return {id, expires, t, stale and 1 or 0}
