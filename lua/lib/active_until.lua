-- active_until(aseq, active, user, now): the seq (a string) of user's ACTIVE token and, while it is live
-- at now, its activeUntil (ms): a seq alone is a token that lapsed and no round has taken out yet; nil
-- when the user has none.
local function active_until(aseq, active, user, now)
  local live = redis.call('HGET', aseq, user)
  if not live then
    return nil
  end
  local till = tonumber(redis.call('ZSCORE', active, user))
  if till and till > now then
    return live, till
  end
  return live
end
