-- end_sessions(active, aseq, noshow, abandoned, events, now, nows, batch): what an admission round
-- (queue_tick, line_admit) does first. At most batch ACTIVE tokens past their activeUntil lapse, then at
-- most batch fans admitted but not shown up by their deadline (still in noshow, no gated call since)
-- are expired and counted in abandoned: both free their slots before anyone is admitted. Each kind is
-- one call of each command for all its fans and one event, queue.lapses and queue.noshows (users and
-- seqs, comma lists; a lapsed token without a seq reads 0). nows is now printed once. Returns how many
-- lapsed and how many were no-shows.
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
  local due = redis.call('ZRANGEBYSCORE', noshow, '-inf', now, 'LIMIT', 0, batch)
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
    redis.call('ZREM', active, unpack(users))
    redis.call('HDEL', aseq, unpack(users))
    redis.call('XADD', events, '*', 'type', 'queue.noshows', 'users', table.concat(users, ','),
      'seqs', table.concat(seqs, ','), 'at', nows)
    redis.call('INCRBY', abandoned, #users)
  end
  return #lapsed, #users
end
