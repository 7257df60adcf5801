-- limited(rl, now, ulimit, uburst): the user's rate bucket (docs/abuse.md), GCRA at ulimit requests a second
-- with bursts of uburst, kept in the string rl as its theoretical arrival time (ms). True when this call
-- is past the limit, and then the bucket is as it was; ulimit 0 turns the limit off. A call spaced
-- from the user's last by a gap or more (most calls: a fan joins once, holds a while later) costs one
-- SET ... GET, which writes the bucket a call finds empty; a call inside a burst writes it again.
-- gcra(tat, now, ulimit, uburst): the same rule on a bucket kept elsewhere (tat: its theoretical arrival
-- time, nil when empty): whether this call is past the limit, and the bucket's time after it (as it was
-- when limited).
local function gcra(tat, now, ulimit, uburst)
  local gap = 1000 / ulimit
  if not tat or tat <= now then
    return false, now + gap
  end
  if tat - now > gap * (uburst - 1) then
    return true, tat
  end
  return false, tat + gap
end

local function limited(rl, now, ulimit, uburst)
  if ulimit <= 0 then
    return false
  end
  local gap = 1000 / ulimit
  local was = redis.call('SET', rl, string.format('%.3f', now + gap), 'PX', math.ceil(gap) + 1, 'GET')
  local tat = tonumber(was)
  local over, after = gcra(tat, now, ulimit, uburst)
  if over then
    redis.call('SET', rl, was, 'PX', math.ceil(tat - now) + 1) -- put back: a limited call changes nothing
  elseif tat and tat > now then
    redis.call('SET', rl, string.format('%.3f', after), 'PX', math.ceil(after - now) + 1)
  end
  return over
end
