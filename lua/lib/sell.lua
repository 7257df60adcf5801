-- sell(seats, res, paying, sold, inv, events, id, payment, balance, paid): the sale of reservation id once
-- its wallet is debited (seat_sell): PAID, its seat SOLD, out of paying, the schedule's
-- and the inventory's sold counts, and its sale event. Returns its JSON and, when this call sold it, its
-- record and the inventory's seats sold after it; a reservation PAID already, its JSON alone; an error
-- reply NOT_FOUND (none), RESERVATION_NOT_HELD (not being paid: the caller refunds).
--#include reservation
local function sell(seats, res, paying, sold, inv, events, id, payment, balance, paid)
  local rec, raw = reservation(res, id)
  if not rec then
    return redis.error_reply('NOT_FOUND')
  elseif rec.status == 'PAID' then
    return raw
  elseif rec.status ~= 'PAYING' then
    return redis.error_reply('RESERVATION_NOT_HELD')
  end
  rec.status, rec.payment, rec.balance, rec.paidAt = 'PAID', payment, tonumber(balance), tonumber(paid)
  raw = cjson.encode(rec)
  redis.call('HSET', res, id, raw)
  redis.call('ZREM', paying, id)
  redis.call('HSET', seats, rec.seat, 'S|' .. id)
  redis.call('HINCRBY', sold, rec.schedule, 1)
  redis.call('XADD', events, '*', 'type', 'sale', 'res', id, 'user', rec.user, 'schedule', rec.schedule,
    'seat', rec.seat, 'price', rec.price, 'payment', payment, 'at', paid)
  return raw, rec, redis.call('HINCRBY', inv, 'sold', 1)
end
