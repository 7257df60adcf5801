-- schedule_counts: seats taken per schedule (read only): held or being paid, and sold. A hold past its
-- expiry that the sweeper has not lapsed yet counts as available.
-- KEYS[1] holds   zset: member res, score expires (ms)
-- KEYS[2] res     hash: res -> reservation JSON
-- KEYS[3] sold    hash: schedule -> seats sold
-- KEYS[4..] seats hash: seat -> state, one per schedule, in the order of ARGV[2..]
-- ARGV[1] now (ms)  ARGV[2..] schedule ids: every schedule whose holds are in holds (a concert's, or the
-- one of a seat slot)
-- Reply: {taken, sold, taken, sold, ...} per schedule; taken = held + being paid + sold
-- Errors: none
-- The lapsed holds are counted without reading their records when there is one schedule (a ZCOUNT), and
-- by the schedule field alone otherwise: a wave of holds expiring together (those of an opening's first
-- minute) can leave tens of thousands for the sweeper, and a read of each cost about 4.5 µs (89 ms a
-- call at 20,000), on every seat count of the concert until it has swept.
local holds, res, sold = KEYS[1], KEYS[2], KEYS[3]
local now = ARGV[1]
local stale = {}
if #ARGV == 2 then -- one schedule: every hold in holds is of it
  stale[ARGV[#ARGV]] = redis.call('ZCOUNT', holds, '-inf', now)
else
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', holds, '-inf', now)) do
    local raw = redis.call('HGET', res, id)
    -- a record without a backslash has no escaped quote, so its schedule is the string after the key
    local s = not string.find(raw, '\\', 1, true) and string.match(raw, '"schedule":"([^"]*)"')
    if not s then
      s = cjson.decode(raw).schedule
    end
    stale[s] = (stale[s] or 0) + 1
  end
end
local out = {}
for i = 2, #ARGV do
  out[#out + 1] = redis.call('HLEN', KEYS[i + 2]) - (stale[ARGV[i]] or 0)
  out[#out + 1] = tonumber(redis.call('HGET', sold, ARGV[i]) or '0')
end
return out
