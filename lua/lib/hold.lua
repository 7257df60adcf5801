-- lapse_stale(res, holds, uholds, events, stale, now): the seat's previous holder's hold, past its
-- expiry, lapses where a new hold takes the seat (seat_hold, seat_take): its record EXPIRED, out of the
-- HELD set and its user's open holds, with its hold.lapse event. stale is its decoded record.
--#include open
local function lapse_stale(res, holds, uholds, events, stale, now)
  stale.status = 'EXPIRED'
  redis.call('HSET', res, stale.id, cjson.encode(stale))
  redis.call('ZREM', holds, stale.id)
  drop_open(uholds, stale.user, stale.id)
  redis.call('XADD', events, '*', 'type', 'hold.lapse', 'res', stale.id, 'user', stale.user,
    'schedule', stale.schedule, 'seat', stale.seat, 'at', now)
end

-- hold_record(id, user, seq, schedule, seat, price, exp, t): a new HELD reservation's record, as
-- cjson.encode writes it (exp: its expiry in ms, printed as an integer; t: now, ms). Written out
-- directly when every string is a plain id (as the service's are: [A-Za-z0-9_-]), so nothing needs
-- escaping and no table is built.
local function hold_record(id, user, seq, schedule, seat, price, exp, t)
  if string.find(id .. user .. schedule .. seat, '^[%w_-]+$') then
    return '{"id":"' .. id .. '","user":"' .. user .. '","seq":' .. string.format('%d', seq) .. ',"schedule":"' ..
      schedule .. '","seat":"' .. seat .. '","price":' .. string.format('%d', price) ..
      ',"status":"HELD","expiresAt":' .. exp .. ',"createdAt":' .. string.format('%d', t) .. '}'
  end
  return cjson.encode({id = id, user = user, seq = tonumber(seq), schedule = schedule, seat = seat,
    price = tonumber(price), status = 'HELD', expiresAt = tonumber(exp), createdAt = t})
end
