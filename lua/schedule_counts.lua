-- schedule_counts: seats taken per schedule (read only): held or being paid, and sold. A hold past its
-- expiry that the sweeper has not lapsed yet counts as available.
-- KEYS[1] holds   zset: member res, score expires (ms)
-- KEYS[2] res     hash: res -> reservation JSON
-- KEYS[3] sold    hash: schedule -> seats sold
-- KEYS[4..] seats hash: seat -> state, one per schedule, in the order of ARGV[2..]
-- ARGV[1] now (ms)  ARGV[2..] schedule ids
-- Reply: {taken, sold, taken, sold, ...} per schedule; taken = held + being paid + sold
-- Errors: none
local holds, res, sold = KEYS[1], KEYS[2], KEYS[3]
local now = ARGV[1]
local stale = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', holds, '-inf', now)) do
  local s = cjson.decode(redis.call('HGET', res, id)).schedule
  stale[s] = (stale[s] or 0) + 1
end
local out = {}
for i = 2, #ARGV do
  out[#out + 1] = redis.call('HLEN', KEYS[i + 2]) - (stale[ARGV[i]] or 0)
  out[#out + 1] = tonumber(redis.call('HGET', sold, ARGV[i]) or '0')
end
return out
