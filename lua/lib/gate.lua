-- The concert's side of a hold (gate_hold, seat_hold): the checks that are not the seat's, and one of
-- the fan's maxHoldsPerUser reserved for the hold until its expiry (an entry of ugate, lib/gate_entries).
-- gate_reserve(cfg, rl, aseq, active, places, noshow, ugate, user, seq, id, t, ulimit, uburst): the
-- hold's expiry (ms), or nil and the refusal (gated's, or HOLD_LIMIT_REACHED). Idempotent by id: an
-- entry for id already replies with its time and reserves nothing more.
--#include gated
local function gate_reserve(cfg, rl, aseq, active, places, noshow, ugate, user, seq, id, t, ulimit, uburst)
  local conf, refused = gated(cfg, rl, aseq, active, places, noshow, user, seq, t, ulimit, uburst)
  if not conf then
    return nil, refused
  end
  -- The fan's entries still counting; one for id already is this call again.
  local live = {}
  for rid, till in string.gmatch(redis.call('HGET', ugate, user) or '', '([^,:]+):(%d+)') do
    if tonumber(till) > t then
      if rid == id then
        return tonumber(till)
      end
      live[#live + 1] = rid .. ':' .. till
    end
  end
  if #live >= tonumber(conf[2]) then
    return nil, redis.error_reply('HOLD_LIMIT_REACHED')
  end
  local expires = t + tonumber(conf[1])
  live[#live + 1] = id .. ':' .. string.format('%d', expires)
  redis.call('HSET', ugate, user, table.concat(live, ','))
  return expires
end
