-- seat_hold: a hold of a seat whose schedule's seat slot is the concert's own slot (a line of one shard
-- keeps its seats there: docs/scaleout.md, "One concert over every master: seat slots"), in one call:
-- the gate's checks, then seat_take's, then the fan's hold counted in the gate; a seat refused writes
-- nothing of the gate. Every rule is the gate's and seat_take's (lib/gate.lua, lib/take.lua).
-- KEYS[1] cfg      hash: hold (ms), maxholds
-- KEYS[2] places   hash: user -> seq of each fan WAITING in the line
-- KEYS[3] active   zset: member user, score activeUntil (ms)
-- KEYS[4] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[5] ugate    hash: user -> comma list of '<res>:<until ms>', the fan's open holds over every schedule
-- KEYS[6] noshow   zset: member user: a gated call, so the fan has shown up
-- KEYS[7] rl       string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- KEYS[8] seats    hash: seat -> 'H|<res>|<expires ms>' | 'P|<res>' (being paid) | 'S|<res>' (sold)
-- KEYS[9] holds    zset: member res, score expires (ms): every HELD reservation of the schedule
-- KEYS[10] res     hash: res -> reservation JSON, the schedule's
-- KEYS[11] events  stream: the schedule's outbox
-- KEYS[12] inv     hash: seats, avail (one seat fewer, unless it was another fan's lapsed hold), sold, soldout
-- ARGV[1] user  ARGV[2] seq of the caller's queue token  ARGV[3] schedule  ARGV[4] seat  ARGV[5] price
-- ARGV[6] id (of the new reservation)  ARGV[7] now (ms)  ARGV[8] ulimit (requests/s, 0 = off)  ARGV[9] uburst
-- Reply: {res, expires (ms), created (ms), lapsed (1 when another fan's expired hold of the seat was lapsed)}
-- Errors: NOT_FOUND (no such concert), QUEUE_NOT_ACTIVE (token still WAITING),
--         QUEUE_TOKEN_EXPIRED (token not live), HOLD_LIMIT_REACHED, RATE_LIMITED, SEAT_UNAVAILABLE
local cfg, places, active, aseq, ugate, noshow = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local rl, seats, holds, res, events, inv = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local user, seq, schedule, seat, price, id, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local ulimit, uburst = tonumber(ARGV[8]), tonumber(ARGV[9])
local t = tonumber(now)
--#include rate_limit
--#include gate
--#include take
local function limit(at)
  return limited(rl, at, ulimit, uburst)
end
local expires, live, refused = gate_check(cfg, limit, aseq, active, places, noshow, ugate, user, seq, id, t)
if not expires then
  return refused
end
local out = take_hold(seats, holds, res, events, inv,
  {id = id, user = user, seq = seq, schedule = schedule, seat = seat, price = price}, string.format('%d', expires), t, now)
if live and not out.err then -- the fan's hold limit counts the hold only once the seat is taken
  gate_write(ugate, user, live)
end
return out
