-- carry(inv, events, avail, sold, now): the concert's seat count on its slot (inv: seats, avail, sold,
-- soldout), carried there from its seat slots' counts by the admission tick (docs/scaleout.md,
-- "Inventory"): avail the slots' AVAILABLE seats (lapsed holds not swept yet included), sold their sold
-- seats. Sold only grows (a tick that read older counts writes no fewer); the carry that finds every
-- seat sold marks the concert sold out, once, with its concert.soldout event. Returns nil when the
-- concert has no count (not loaded), else whether it is sold out.
local function carry(inv, events, avail, sold, now)
  local had = redis.call('HMGET', inv, 'seats', 'sold', 'soldout')
  if not had[1] then
    return nil
  end
  local total = math.max(tonumber(sold), tonumber(had[2] or '0'))
  redis.call('HSET', inv, 'avail', avail, 'sold', total)
  if had[3] == '1' then
    return true
  end
  if total >= tonumber(had[1]) then
    redis.call('HSET', inv, 'soldout', 1)
    redis.call('XADD', events, '*', 'type', 'concert.soldout', 'sold', total, 'at', now)
    return true
  end
  return false
end

-- carry_slots(inv, events, slots, now): carry from the seat slots whose inv and holds keys slots lists,
-- in pairs (those in the concert's own slot: a line of one shard's tick carries them in its own call).
-- Returns the AVAILABLE seats and whether sold out, or nil when the concert has no count.
--#include stock
local function carry_slots(inv, events, slots, now)
  local avail, sold = slot_counts(slots, now)
  local out = carry(inv, events, string.format('%d', avail), string.format('%d', sold), now)
  return avail, out
end
