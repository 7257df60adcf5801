-- stock(inv, holds, slots, now, exact): the concert's AVAILABLE seats (holds past their expiry not swept
-- yet counted) and whether it is sold out, as the count the tick carries to inv has them
-- (docs/scaleout.md, "Inventory"). With exact, and slots listing the inv and holds keys, in pairs, of seat
-- slots in the concert's own slot (a line of one shard), the AVAILABLE seats are summed from those at
-- the instant of the call instead: activePerSeat admits against the seats as they are, not a tick ago.
-- slot_counts(slots, now): the AVAILABLE seats (holds past their expiry not swept yet counted) and the
-- sold seats of the seat slots whose inv and holds keys slots lists, in pairs (lib/carry.lua too).
local function slot_counts(slots, now)
  local avail, sold = 0, 0
  for i = 1, #slots, 2 do
    local c = redis.call('HMGET', slots[i], 'avail', 'sold')
    avail = avail + tonumber(c[1] or '0') + redis.call('ZCOUNT', slots[i + 1], '-inf', now)
    sold = sold + tonumber(c[2] or '0')
  end
  return avail, sold
end

local function stock(inv, holds, slots, now, exact)
  local s = redis.call('HMGET', inv, 'avail', 'soldout')
  if not exact then
    return 0, s[2] == '1'
  end
  if #slots == 0 then
    return tonumber(s[1] or '0') + redis.call('ZCOUNT', holds, '-inf', now), s[2] == '1'
  end
  return (slot_counts(slots, now)), s[2] == '1'
end
