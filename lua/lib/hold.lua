-- The hold of a seat (seat_hold, seat_take).
-- lapse_stale(res, holds, events, stale, now): the seat's previous holder's hold, past its expiry, lapses
-- where a new hold takes the seat (seat_hold, seat_take): its record EXPIRED, out of the HELD set, with
-- its hold.lapse event. stale is its decoded record.
local function lapse_stale(res, holds, events, stale, now)
  stale.status = 'EXPIRED'
  redis.call('HSET', res, stale.id, cjson.encode(stale))
  redis.call('ZREM', holds, stale.id)
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

-- seat_free(seats, res, seat, t): whether seat can be held at t: true when it is free, and true with the
-- decoded record of a hold past its expiry (which take_seat lapses); false while it is held, being paid
-- or sold.
local function seat_free(seats, res, seat, t)
  local state = redis.call('HGET', seats, seat)
  if not state then
    return true, nil
  end
  local kind, rid, due = string.match(state, '^(%a)|([^|]+)|?(%d*)$')
  if kind ~= 'H' or tonumber(due) > t then
    return false
  end
  return true, cjson.decode(redis.call('HGET', res, rid))
end

-- take_seat(seats, holds, res, events, inv, stale, h, exp, t, now): the hold h ({id, user, seq,
-- schedule, seat, price}) takes its seat until exp (ms, printed) in the seat slot of those keys: the stale
-- hold seat_free found lapsed, or one seat fewer available (a lapsed hold's seat was counted taken
-- already); the reservation written HELD, the seat's state, the HELD set and its hold.create event.
local function take_seat(seats, holds, res, events, inv, stale, h, exp, t, now)
  if stale then
    lapse_stale(res, holds, events, stale, now)
  else
    redis.call('HINCRBY', inv, 'avail', -1)
  end
  redis.call('HSET', res, h.id, hold_record(h.id, h.user, h.seq, h.schedule, h.seat, h.price, exp, t))
  redis.call('HSET', seats, h.seat, 'H|' .. h.id .. '|' .. exp)
  redis.call('ZADD', holds, exp, h.id)
  redis.call('XADD', events, '*', 'type', 'hold.create', 'res', h.id, 'user', h.user, 'schedule', h.schedule,
    'seat', h.seat, 'price', h.price, 'expires', exp, 'seq', h.seq, 'at', now)
end
