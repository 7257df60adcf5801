-- queue_leave: a fan leaves the line, or gives back their active slot.
-- A leaver's seq is logged (left, leftlog) so that every instance can close the gap in the positions
-- behind them without asking Redis per poll.
-- KEYS[1] wait     zset: member user, score seq
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
local user, seq = ARGV[1], ARGV[2]
local waiting = redis.call('ZSCORE', KEYS[1], user)
if waiting and tonumber(waiting) == tonumber(seq) then
  redis.call('ZREM', KEYS[1], user)
  redis.call('ZADD', KEYS[4], seq, seq)
  local ord = redis.call('INCR', KEYS[6])
  redis.call('ZADD', KEYS[5], ord, seq)
  redis.call('XADD', KEYS[7], '*', 'type', 'queue.leave', 'user', user, 'seq', seq, 'from', 'WAITING', 'ord', ord,
    'at', ARGV[3])
  return 'WAITING'
end
if redis.call('HGET', KEYS[3], user) == seq then
  redis.call('ZREM', KEYS[2], user)
  redis.call('HDEL', KEYS[3], user)
  redis.call('XADD', KEYS[7], '*', 'type', 'queue.leave', 'user', user, 'seq', seq, 'from', 'ACTIVE', 'at', ARGV[3])
  return 'ACTIVE'
end
return 'NONE'
