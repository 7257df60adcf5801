-- line_leave: the second step of a leave from a sharded line, on the fan's shard: a fan WAITING here at
-- seq is taken out of it. The first step (line_left, on the concert's slot) has decided the leave already:
-- given back the ACTIVE slot, or marked the seq quit and logged it, so no tick admits the fan meanwhile.
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
