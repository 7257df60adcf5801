-- A reservation's record: res, the hash id -> its JSON (cjson), in the slot of its seats.
-- reservation(res, id): its decoded record and its JSON, or nil when there is none.
-- own_reservation(res, id, user): the same, and nil when it is another user's (a caller answers NOT_FOUND
-- either way: another's reservation is not told apart from none).
local function reservation(res, id)
  local raw = redis.call('HGET', res, id)
  if not raw then
    return nil
  end
  return cjson.decode(raw), raw
end

local function own_reservation(res, id, user)
  local rec, raw = reservation(res, id)
  if rec and rec.user ~= user then
    return nil
  end
  return rec, raw
end
