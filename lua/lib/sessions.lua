-- end_sessions(active, aseq, noshow, abandoned, events, now, nows, batch): what an admission round
-- (queue_tick, line_admit) does first. At most batch ACTIVE tokens past their activeUntil lapse, with
-- one event for them all (queue.lapses: users and seqs, comma lists; seq 0 for a token without one),
-- then at most batch fans admitted but not shown up by their deadline (still in noshow, no gated call
-- since) are expired (queue.noshow) and counted in abandoned: both free their slots before anyone is
-- admitted. nows is now printed once. Returns how many lapsed and how many were no-shows.
local function end_sessions(active, aseq, noshow, abandoned, events, now, nows, batch)
  local lapsed = redis.call('ZRANGEBYSCORE', active, '-inf', now, 'LIMIT', 0, batch)
  if #lapsed > 0 then -- one call of each kind for them all, and one event
    local seqs = redis.call('HMGET', aseq, unpack(lapsed))
    for i = 1, #lapsed do
      seqs[i] = seqs[i] or '0'
    end
    redis.call('ZREM', active, unpack(lapsed))
    redis.call('HDEL', aseq, unpack(lapsed))
    redis.call('XADD', events, '*', 'type', 'queue.lapses', 'users', table.concat(lapsed, ','),
      'seqs', table.concat(seqs, ','), 'at', nows)
  end
  local noshows = 0
  for _, user in ipairs(redis.call('ZRANGEBYSCORE', noshow, '-inf', now, 'LIMIT', 0, batch)) do
    redis.call('ZREM', noshow, user)
    local seq = redis.call('HGET', aseq, user)
    if seq and tonumber(redis.call('ZSCORE', active, user) or '0') > now then
      redis.call('ZREM', active, user)
      redis.call('HDEL', aseq, user)
      redis.call('XADD', events, '*', 'type', 'queue.noshow', 'user', user, 'seq', seq, 'at', nows)
      noshows = noshows + 1
    end
  end
  if noshows > 0 then
    redis.call('INCRBY', abandoned, noshows)
  end
  return #lapsed, noshows
end
