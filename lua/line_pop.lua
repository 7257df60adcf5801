-- line_pop: the last step of a sharded tick, on one shard: the fans line_admit admitted or dropped leave
-- this shard's part of the line (a fan whose seq is no longer theirs here is left alone), so a pop sent
-- twice changes nothing the second time. Until it runs the fans stay at the head, and the next tick
-- finds them admitted already (line_admit skips them) and pops them then. Their entries leave the front
-- of the shard's lists too, so that the next line_heads does not read them again. A fan the round
-- admitted keeps their token here (tok), which the gate's steps on this shard read (gate_apply), written
-- only while the fan still waits here at that seq (a fan who left meanwhile has none). The shown marks
-- the round applied are cleared.
-- KEYS[1] places hash: user -> seq of each fan WAITING in this shard
-- KEYS[2] alive  hash: seq -> when its fan was last seen (ms)
-- KEYS[3] order  list: '<seq>|<user>' of this shard's arrivals in seq order
-- KEYS[4] drawn  list: '<seq>|<user>' of this shard's entrants placed, in draw order
-- KEYS[5] tok    hash: user -> '<seq>:<until ms>:<show deadline ms, 0 shown>' of the fan's ACTIVE token
-- KEYS[6] shown  set: the shown marks (line_heads)
-- ARGV[1] applied: the shown marks line_admit applied, comma-separated ('' none)
-- ARGV[2..] user: the fans that left the line, each as user, seq, token ('' for a fan not admitted here)
-- Reply: the number of fans taken out of this shard
-- Errors: none.
local places, alive, order, drawn, tok, shown = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local applied = ARGV[1]
--#include line
if applied ~= '' then
  local marks = {}
  for m in string.gmatch(applied, '[^,]+') do
    marks[#marks + 1] = m
  end
  redis.call('SREM', shown, unpack(marks))
end
local n, popped, fans = 0, {}, 0
for i = 2, #ARGV, 3 do
  local user, seq, token = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if tonumber(redis.call('HGET', places, user)) == tonumber(seq) then
    redis.call('HDEL', places, user)
    if token ~= '' then
      redis.call('HSET', tok, user, token)
    end
    n = n + 1
  end
  redis.call('HDEL', alive, seq)
  popped[entry(seq, user)] = true
  fans = fans + 1
end
-- The popped fans are the first still waiting in this shard: their entries lead its lists, after any
-- stale ones line_heads trims.
for _, list in ipairs({drawn, order}) do
  local front = redis.call('LRANGE', list, 0, fans - 1)
  local c = 0
  while c < #front and popped[front[c + 1]] do
    c = c + 1
  end
  if c > 0 then
    redis.call('LTRIM', list, c, -1)
  end
  if #front > 0 and c < #front then
    break -- the list goes on with a fan not popped here: the arrivals come after
  end
end
return n
