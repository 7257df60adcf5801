-- A fan's gate entries on the concert's slot (lib/gate.lua, lib/follow.lua): ugate, user -> a comma
-- list of '<res>:<until ms>', one per open hold over every seat slot, each counting until its time.
-- gate_live(ugate, user, t, except): the entries still counting at t, but the one of reservation except,
-- and that one's time when it still counts (nil otherwise).
-- gate_write(ugate, user, live): the fan's entries are live from now on (none: the field goes).
local function gate_live(ugate, user, t, except)
  local live, own = {}, nil
  for rid, u in string.gmatch(redis.call('HGET', ugate, user) or '', '([^,:]+):(%d+)') do
    if tonumber(u) > t then
      if rid == except then
        own = tonumber(u)
      else
        live[#live + 1] = rid .. ':' .. u
      end
    end
  end
  return live, own
end

local function gate_write(ugate, user, live)
  if #live == 0 then
    redis.call('HDEL', ugate, user)
  else
    redis.call('HSET', ugate, user, table.concat(live, ','))
  end
end
