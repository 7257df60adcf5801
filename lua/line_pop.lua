-- line_pop: the last step of a sharded tick, on one shard: the fans line_admit admitted or dropped leave
-- this shard's part of the line (a fan whose seq is no longer theirs here is left alone), so a pop sent
-- twice changes nothing the second time. Until it runs the fans stay at the head, and the next tick
-- finds them admitted already (line_admit skips them) and pops them then.
-- KEYS[1] places hash: user -> seq of each fan WAITING in this shard (their list entries go stale:
--                 line_heads trims them)
-- KEYS[2] alive  hash: seq -> when its fan was last seen (ms)
-- ARGV[1..] user: the fans that left the line, each as user, seq
-- Reply: the number of fans taken out of this shard
-- Errors: none.
local places, alive = KEYS[1], KEYS[2]
local n = 0
for i = 1, #ARGV, 2 do
  local user, seq = ARGV[i], ARGV[i + 1]
  if tonumber(redis.call('HGET', places, user)) == tonumber(seq) then
    redis.call('HDEL', places, user)
    n = n + 1
  end
  redis.call('HDEL', alive, seq)
end
return n
