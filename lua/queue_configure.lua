-- queue_configure: changes a concert's admission settings. The tick reads them from here, so they are
-- in force on the next tick of every scheduler.
-- KEYS[1] cfg     hash: cap, rate, ttl (ms), hold (ms), maxholds, paused
-- KEYS[2] events  stream: the concert's outbox
-- ARGV[1] cap ('' keeps it)
-- ARGV[2] rate ('' keeps it)
-- ARGV[3] paused ('0'|'1'; '' keeps it)
-- ARGV[4] now (ms)
-- Reply: {cap, rate, paused (0|1)} after the change
-- Errors: NOT_FOUND (no such concert in Redis)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('NOT_FOUND')
end
local names = {'cap', 'rate', 'paused'}
for i = 1, 3 do
  if ARGV[i] ~= '' then
    redis.call('HSET', KEYS[1], names[i], ARGV[i])
  end
end
local cfg = redis.call('HMGET', KEYS[1], 'cap', 'rate', 'paused')
redis.call('XADD', KEYS[2], '*', 'type', 'queue.configure', 'cap', cfg[1], 'rate', cfg[2], 'paused', cfg[3], 'at', ARGV[4])
return {tonumber(cfg[1]), tonumber(cfg[2]), cfg[3] == '1' and 1 or 0}
