-- line_heads: the head of one shard of a sharded line (read only): its size and its first fans in seq
-- order, with when each was last seen, for the tick to merge the shards' heads in arrival order.
-- KEYS[1] wait   zset: member user, score seq (this shard's part of the line)
-- KEYS[2] alive  hash: seq -> when its fan was last seen (ms)
-- ARGV[1] count: most fans to return
-- Reply: {waiting, user, seq, seen (ms, 0 never), user, seq, seen, ...}
-- Errors: none.
local wait, alive = KEYS[1], KEYS[2]
local count = tonumber(ARGV[1])
local out = {redis.call('ZCARD', wait)}
local head = redis.call('ZRANGE', wait, 0, count - 1, 'WITHSCORES')
for i = 1, #head, 2 do
  out[#out + 1] = head[i]
  out[#out + 1] = tonumber(head[i + 1])
  out[#out + 1] = tonumber(redis.call('HGET', alive, head[i + 1]) or '0')
end
return out
