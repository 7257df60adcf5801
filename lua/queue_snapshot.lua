-- queue_snapshot: what an instance needs to answer polls of WAITING tokens on its own (read only):
-- the head of the line, the newest arrival, the settings, and the leaves it has not seen yet.
-- KEYS[1] cfg       hash: cap, rate, ttl (ms), paused
-- KEYS[2] head      string: highest seq that left the line by admission
-- KEYS[3] seq       string: newest arrival seq
-- KEYS[4] admitted  string: admissions so far
-- KEYS[5] places    hash: user -> seq of each fan WAITING in the line
-- KEYS[6] active    zset: member user, score activeUntil (ms)
-- KEYS[7] leftlog   zset: member seq, score leave ordinal
-- KEYS[8] inv       hash: avail, soldout (kept by the seat scripts)
-- KEYS[9] holds     zset: member res, score expires (ms): lapsed but unswept holds count as available
-- KEYS[10] abandoned string: fans dropped so far for not polling or not showing up
-- KEYS[11] lw       string: fans waiting in the shards of a sharded line at the last tick (waiting counts them)
-- ARGV[1] after: the last leave ordinal the instance has seen
-- ARGV[2] limit: most leaves to return
-- ARGV[3] now (ms)
-- Reply: {found (0|1), head, tail, admitted, waiting, active, cap, rate, paused (0|1),
--         {seq, ordinal, seq, ordinal, ...}: the leaves after ordinal after, in ordinal order,
--         soldout (0|1), available (seats AVAILABLE now), aps, abandoned, abandon (ms)}
-- Errors: none.
local cfg, head, seq, admitted, places, active, leftlog = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local inv, holds, abandoned, lw = KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local after, limit, now = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local conf = redis.call('HMGET', cfg, 'cap', 'rate', 'paused', 'aps', 'abandon')
if not conf[1] then
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, {}, 0, 0, 0, 0, 0}
end
local stock = redis.call('HMGET', inv, 'avail', 'soldout')
local function num(key)
  return tonumber(redis.call('GET', key) or '0')
end
local leaves = redis.call('ZRANGEBYSCORE', leftlog, '(' .. after, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
return {1, num(head), num(seq), num(admitted), redis.call('HLEN', places) + num(lw),
  redis.call('ZCOUNT', active, '(' .. now, '+inf'), tonumber(conf[1]), tonumber(conf[2]),
  conf[3] == '1' and 1 or 0, leaves, stock[2] == '1' and 1 or 0,
  tonumber(stock[1] or '0') + redis.call('ZCOUNT', holds, '-inf', now), tonumber(conf[4] or '0'), num(abandoned),
  tonumber(conf[5] or '0')}
