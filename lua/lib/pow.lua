-- pow_refusal(pow, powid, powbits, powexp, need, now): nil when a join that must carry a proof of work of
-- need bits (need > 0) carries a good one, which is then marked used until it expires (pow: the
-- challenge's key; a challenge works once); else the error reply. powid is the checked challenge's id
-- ('' none, '-' a proof that failed the check), powbits its difficulty, powexp its expiry (ms).
local function pow_refusal(pow, powid, powbits, powexp, need, now)
  if powid == '' then
    return redis.error_reply('POW_REQUIRED')
  end
  if powid == '-' or powbits < need or powexp <= now then
    return redis.error_reply('POW_INVALID')
  end
  if not redis.call('SET', pow, '1', 'NX', 'PX', powexp - now) then
    return redis.error_reply('POW_INVALID')
  end
  return nil
end
