-- end_tokens(active, aseq, events, users, seqs, why, nows): the ACTIVE tokens of users (of arrival seqs
-- seqs) end: out of the active set in one call of each command, with one event for them all, why
-- 'lapse' (queue.lapses) or 'noshow' (queue.noshows).
local function end_tokens(active, aseq, events, users, seqs, why, nows)
  redis.call('ZREM', active, unpack(users))
  redis.call('HDEL', aseq, unpack(users))
  if why == 'lapse' then
    redis.call('XADD', events, '*', 'type', 'queue.lapses', 'users', table.concat(users, ','),
      'seqs', table.concat(seqs, ','), 'at', nows)
  else
    redis.call('XADD', events, '*', 'type', 'queue.noshows', 'users', table.concat(users, ','),
      'seqs', table.concat(seqs, ','), 'at', nows)
  end
end

-- end_sessions(active, aseq, noshow, abandoned, events, now, nows, batch, grace): what an admission round
-- (queue_tick, line_admit) does first. At most batch ACTIVE tokens past their activeUntil lapse, then at
-- most batch fans admitted but not shown up by grace ms after their deadline (still in noshow, no gated
-- call since) are expired and counted in abandoned: both free their slots before anyone is admitted. Each kind is
-- one call of each command for all its fans and one event, queue.lapses and queue.noshows (users and
-- seqs, comma lists; a lapsed token without a seq reads 0). nows is now as a string, printed once. Returns how many
-- lapsed and how many were no-shows.
local function end_sessions(active, aseq, noshow, abandoned, events, now, nows, batch, grace)
  local lapsed = redis.call('ZRANGEBYSCORE', active, '-inf', now, 'LIMIT', 0, batch)
  if #lapsed > 0 then -- one call of each kind for them all, and one event
    local seqs = redis.call('HMGET', aseq, unpack(lapsed))
    for i = 1, #lapsed do
      seqs[i] = seqs[i] or '0'
    end
    end_tokens(active, aseq, events, lapsed, seqs, 'lapse', nows)
  end
  local due = redis.call('ZRANGEBYSCORE', noshow, '-inf', now - grace, 'LIMIT', 0, batch)
  local users, seqs = {}, {}
  if #due > 0 then -- those still ACTIVE with their seq are expired, in one call of each kind and one event
    redis.call('ZREM', noshow, unpack(due))
    local live, tills = redis.call('HMGET', aseq, unpack(due)), redis.call('ZMSCORE', active, unpack(due))
    for i, user in ipairs(due) do
      if live[i] and tonumber(tills[i] or '0') > now then
        users[#users + 1], seqs[#seqs + 1] = user, live[i]
      end
    end
  end
  if #users > 0 then
    end_tokens(active, aseq, events, users, seqs, 'noshow', nows)
    redis.call('INCRBY', abandoned, #users)
  end
  return #lapsed, #users
end
