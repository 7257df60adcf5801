-- gate_hold: step 1 of a hold of a concert whose seats are spread over slots of their own (one per
-- schedule): on the concert's slot, the checks of seat_hold that are not the seat's. The fan's rate, the
-- token ACTIVE, the fan shown up (off the no-show watch), and one of the fan's maxHoldsPerUser reserved
-- for reservation id until the hold's expiry. Each gate entry counts until its time: a hold's expiry, or
-- a while longer once it is being paid (lib/follow.lua), so an entry whose hold never came (a crash between
-- the steps) or whose give-back was lost stops counting by itself when the hold would have lapsed.
-- Idempotent by id: a second call for the same id reserves nothing more and replies with its time.
-- KEYS[1] cfg      hash: hold (ms), maxholds
-- KEYS[2] places   hash: user -> seq of each fan WAITING in the line
-- KEYS[3] active   zset: member user, score activeUntil (ms)
-- KEYS[4] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[5] ugate    hash: user -> comma list of '<res>:<until ms>', the fan's open holds over every schedule
-- KEYS[6] noshow   zset: member user: a gated call, so the fan has shown up
-- KEYS[7] rl       string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- ARGV[1] user  ARGV[2] seq of the caller's queue token  ARGV[3] id (of the new reservation)  ARGV[4] now (ms)
-- ARGV[5] ulimit (requests/s, 0 = off)  ARGV[6] uburst
-- Reply: the hold's expiry (ms), which step 2 (seat_take) gives the reservation
-- Errors: NOT_FOUND (no such concert), QUEUE_NOT_ACTIVE (token still WAITING), QUEUE_TOKEN_EXPIRED (token
--         not live), HOLD_LIMIT_REACHED, RATE_LIMITED
local cfg, places, active, aseq, ugate, noshow = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local rl = KEYS[7]
local user, seq, id, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ulimit, uburst = tonumber(ARGV[5]), tonumber(ARGV[6])
--#include gate
local expires, refused = gate_reserve(cfg, rl, aseq, active, places, noshow, ugate, user, seq, id, tonumber(now),
  ulimit, uburst)
if not expires then
  return refused
end
return expires
