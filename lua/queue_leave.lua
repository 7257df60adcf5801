-- queue_leave: a fan leaves the line, or gives back their active slot.
-- A leaver's seq is logged (left, leftlog) so that every instance can close the gap in the positions
-- behind them without asking Redis per poll.
-- KEYS[1] places   hash: user -> seq of each fan WAITING in the line (a leaver's entry in the line's
--                  list stays, stale, until the head reaches it)
-- KEYS[2] active   zset: member user, score activeUntil (ms)
-- KEYS[3] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[4] left     zset: member seq, score seq (leavers still above head)
-- KEYS[5] leftlog  zset: member seq, score leave ordinal (what instances read incrementally)
-- KEYS[6] leftn    string: leave ordinal counter
-- KEYS[7] events   stream: the concert's outbox
-- ARGV[1] user id
-- ARGV[2] seq of the token being given back
-- ARGV[3] now (ms)
-- Reply: 'WAITING' (left the line), 'ACTIVE' (slot given back), 'NONE' (the token was no longer live)
-- Errors: none.
local places, active, aseq, left, leftlog, leftn, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local user, seq, now = ARGV[1], ARGV[2], ARGV[3]
--#include leaves
--#include end_token
local waiting = redis.call('HGET', places, user)
if waiting and tonumber(waiting) == tonumber(seq) then
  redis.call('HDEL', places, user)
  log_leave(left, leftlog, leftn, events, user, seq, 'WAITING', now)
  return 'WAITING'
end
if redis.call('HGET', aseq, user) == seq then
  end_token(active, aseq, events, user, seq, 'leave', now)
  return 'ACTIVE'
end
return 'NONE'
