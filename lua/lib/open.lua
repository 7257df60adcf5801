-- A user's open reservations of a concert (or of a seat slot): uholds, user -> their ids as a comma list,
-- kept by every script that opens or ends a hold. Open means HELD and unexpired, or being paid; every
-- script keeps a reservation in holds (score: its expiry) exactly while it is HELD and in paying exactly
-- while it is PAYING, so the two zsets tell which are open without reading a record.
-- open_holds(uholds, holds, paying, user, t): the user's reservations open at t (ms).
-- drop_open(uholds, user, id): id out of the user's list.
local function open_holds(uholds, holds, paying, user, t)
  local open = {}
  for rid in string.gmatch(redis.call('HGET', uholds, user) or '', '[^,]+') do
    local exp = redis.call('ZSCORE', holds, rid)
    if exp then
      if tonumber(exp) > t then open[#open + 1] = rid end
    elseif redis.call('ZSCORE', paying, rid) then
      open[#open + 1] = rid
    end
  end
  return open
end

local function drop_open(uholds, user, id)
  local rest = {}
  for rid in string.gmatch(redis.call('HGET', uholds, user) or '', '[^,]+') do
    if rid ~= id then rest[#rest + 1] = rid end
  end
  redis.call('HSET', uholds, user, table.concat(rest, ','))
end
