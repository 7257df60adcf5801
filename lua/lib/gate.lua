-- The concert's side of a hold (gate_apply, seat_hold): the checks that are not the seat's, and one of
-- the fan's maxHoldsPerUser reserved for the hold until its expiry (an entry of ugate, lib/gate_entries).
-- gate_check(cfg, limit, aseq, active, places, noshow, ugate, user, seq, id, t): the hold's
-- expiry (ms) and the fan's entries with the hold's own to write (gate_write) once the hold is to
-- stand, or nil, nil and the refusal (gated's, or HOLD_LIMIT_REACHED). Writes nothing of the gate, so
-- that a hold the seat then refuses (seat_hold) costs one read of it. Idempotent by id: an entry for id
-- already replies with its time and no entries (nothing more to reserve).
-- gate_reserve(...): the same, the entries written at once (gate_apply, whose seat is taken in a call
-- after it): the expiry, or nil and the refusal.
--#include gated
--#include gate_entries
local function gate_check(cfg, limit, aseq, active, places, noshow, ugate, user, seq, id, t)
  local conf, refused = gated(cfg, limit, aseq, active, places, noshow, user, seq, t)
  if not conf then
    return nil, nil, refused
  end
  local live, own = gate_live(ugate, user, t, id)
  if own then
    return own, nil
  end
  if #live >= tonumber(conf[2]) then
    return nil, nil, redis.error_reply('HOLD_LIMIT_REACHED')
  end
  local expires = t + tonumber(conf[1])
  live[#live + 1] = id .. ':' .. string.format('%d', expires)
  return expires, live
end

local function gate_reserve(cfg, limit, aseq, active, places, noshow, ugate, user, seq, id, t)
  local expires, live, refused = gate_check(cfg, limit, aseq, active, places, noshow, ugate, user, seq, id, t)
  if live then
    gate_write(ugate, user, live)
  end
  return expires, refused
end
