-- line_leave: a WAITING fan of a sharded line leaves it, on their shard. The leave is then logged on the
-- concert's slot (line_left), where every instance reads the leaves to close the gap in the positions
-- behind them. A fan no longer waiting here (ACTIVE, or gone) changes nothing: their ACTIVE slot is given
-- back on the concert's slot (queue_leave).
-- KEYS[1] places hash: user -> seq of each fan WAITING in this shard (a leaver's list entry stays, stale)
-- KEYS[2] alive  hash: seq -> when its fan was last seen (ms)
-- ARGV[1] user id
-- ARGV[2] seq of the token being given back
-- Reply: 'WAITING' (left the line), 'NONE' (not waiting here with that seq)
-- Errors: none.
local places, alive = KEYS[1], KEYS[2]
local user, seq = ARGV[1], ARGV[2]
if tonumber(redis.call('HGET', places, user)) ~= tonumber(seq) then
  return 'NONE'
end
redis.call('HDEL', places, user)
redis.call('HDEL', alive, seq)
return 'WAITING'
