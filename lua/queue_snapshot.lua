-- queue_snapshot: what an instance needs to answer polls of WAITING tokens on its own (read only):
-- the head of the line, the newest arrival, the settings, and the leaves it has not seen yet.
-- KEYS[1] cfg       hash: cap, rate, ttl (ms), paused
-- KEYS[2] head      string: highest seq that left the line by admission
-- KEYS[3] seq       string: newest arrival seq
-- KEYS[4] admitted  string: admissions so far
-- KEYS[5] wait      zset: the line
-- KEYS[6] active    zset: member user, score activeUntil (ms)
-- KEYS[7] leftlog   zset: member seq, score leave ordinal
-- ARGV[1] the last leave ordinal the instance has seen
-- ARGV[2] most leaves to return
-- ARGV[3] now (ms)
-- Reply: {found (0|1), head, tail, admitted, waiting, active, cap, rate, paused (0|1),
--         {seq, ordinal, seq, ordinal, ...} leaves after ARGV[1] in ordinal order}
-- Errors: none.
local cfg = redis.call('HMGET', KEYS[1], 'cap', 'rate', 'paused')
if not cfg[1] then
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, {}}
end
local function num(key)
  return tonumber(redis.call('GET', key) or '0')
end
local leaves = redis.call('ZRANGEBYSCORE', KEYS[7], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
return {1, num(KEYS[2]), num(KEYS[3]), num(KEYS[4]), redis.call('ZCARD', KEYS[5]),
  redis.call('ZCOUNT', KEYS[6], '(' .. ARGV[3], '+inf'), tonumber(cfg[1]), tonumber(cfg[2]),
  cfg[3] == '1' and 1 or 0, leaves}
