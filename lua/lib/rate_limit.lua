-- limited(rl, now, ulimit, uburst): the user's rate bucket (docs/abuse.md), GCRA at ulimit requests a second
-- with bursts of uburst, kept in the string rl as its theoretical arrival time (ms). True when this call
-- is past the limit, and then the bucket is as it was; ulimit 0 turns the limit off. A call spaced
-- from the user's last by a gap or more (most calls: a fan joins once, holds a while later) costs one
-- SET ... GET, which writes the bucket a call finds empty; a call inside a burst writes it again.
local function limited(rl, now, ulimit, uburst)
  if ulimit <= 0 then
    return false
  end
  local gap = 1000 / ulimit
  local was = redis.call('SET', rl, string.format('%.3f', now + gap), 'PX', math.ceil(gap) + 1, 'GET')
  local tat = tonumber(was)
  if not tat or tat <= now then
    return false
  end
  if tat - now > gap * (uburst - 1) then
    redis.call('SET', rl, was, 'PX', math.ceil(tat - now) + 1) -- put back: a limited call changes nothing
    return true
  end
  redis.call('SET', rl, string.format('%.3f', tat + gap), 'PX', math.ceil(tat + gap - now) + 1)
  return false
end
