-- line_leave: the second step of a leave from a sharded line, on the fan's shard: a fan WAITING here at
-- seq is taken out of it. The first step (line_left, on the concert's slot) has decided the leave already:
-- given back the ACTIVE slot, or marked the seq quit and logged it, so no tick admits the fan meanwhile.
-- The token of that seq this shard keeps for the gate (tok) ends too, whether or not one is here: a
-- gate step that learns the token from the concert's slot after the leave finds it ended (gate_apply).
-- KEYS[1] places hash: user -> seq of each fan WAITING in this shard (a leaver's list entry stays, stale)
-- KEYS[2] alive  hash: seq -> when its fan was last seen (ms)
-- KEYS[3] tok    hash: user -> the fan's token ('<seq>:<until>:<deadline>', '<seq>:x' once ended)
-- ARGV[1] user id
-- ARGV[2] seq of the token being given back
-- Reply: 'WAITING' (left the line), 'NONE' (not waiting here with that seq)
-- Errors: none.
local places, alive, tok = KEYS[1], KEYS[2], KEYS[3]
local user, seq = ARGV[1], ARGV[2]
local held = tonumber(string.match(redis.call('HGET', tok, user) or '', '^(%d+)') or '0')
if held <= tonumber(seq) then
  redis.call('HSET', tok, user, seq .. ':x')
end
if tonumber(redis.call('HGET', places, user)) ~= tonumber(seq) then
  return 'NONE'
end
redis.call('HDEL', places, user)
redis.call('HDEL', alive, seq)
return 'WAITING'
