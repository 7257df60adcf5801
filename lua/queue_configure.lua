-- queue_configure: changes a concert's admission settings. The tick reads them from here, so they are
-- in force on the next tick of every scheduler.
-- KEYS[1] cfg     hash: cap, rate, ttl (ms), hold (ms), maxholds, paused, pow, codereq, aps, abandon (ms), noshow (ms)
-- KEYS[2] events  stream: the concert's outbox
-- ARGV[1] cap ('' keeps it)
-- ARGV[2] rate ('' keeps it)
-- ARGV[3] paused ('0'|'1'; '' keeps it)
-- ARGV[4] now (ms)
-- ARGV[5] pow (joinPowBits; '' keeps it)  ARGV[6] codereq ('0'|'1'; '' keeps it)
-- ARGV[7] aps (activePerSeat; '' keeps it)
-- ARGV[8] abandon (abandonAfter, ms; '' keeps it)
-- ARGV[9] noshow (noShow, ms; '' keeps it)
-- Reply: {cap, rate, paused (0|1), aps} after the change
-- Errors: NOT_FOUND (no such concert in Redis)
local cfg, events = KEYS[1], KEYS[2]
local cap, rate, paused, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local pow, codereq, aps, abandon, noshow = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
if redis.call('EXISTS', cfg) == 0 then
  return redis.error_reply('NOT_FOUND')
end
local given = {cap = cap, rate = rate, paused = paused, pow = pow, codereq = codereq, aps = aps, abandon = abandon,
  noshow = noshow}
for _, name in ipairs({'cap', 'rate', 'paused', 'pow', 'codereq', 'aps', 'abandon', 'noshow'}) do
  if given[name] ~= '' then
    redis.call('HSET', cfg, name, given[name])
  end
end
local conf = redis.call('HMGET', cfg, 'cap', 'rate', 'paused', 'aps')
redis.call('XADD', events, '*', 'type', 'queue.configure', 'cap', conf[1], 'rate', conf[2], 'paused', conf[3],
  'aps', conf[4] or '0', 'at', now)
return {tonumber(conf[1]), tonumber(conf[2]), conf[3] == '1' and 1 or 0, tonumber(conf[4] or '0')}
