-- admit(adm, user, seq, tills, shows): notes the admission of user's arrival seq in adm, a round's
-- admissions (queue_tick, line_admit), until tills (its activeUntil, ms, printed), on the no-show watch
-- until shows when shows is not nil; write_admitted(active, aseq, noshow, admitted, abandoned, events,
-- adm, dropped, tills, nows) then writes them all at once: a ZADD, an HSET and a ZADD for the round
-- instead of three commands a fan, the round's counts (admitted, and the dropped in abandoned), and one
-- event for the round, queue.admits (users and seqs: comma lists in the order admitted; until, at),
-- instead of an XADD a fan. A round admits at most a tick's batch (1,000), within what unpack can pass.
local function admit(adm, user, seq, tills, shows)
  adm.active[#adm.active + 1] = tills
  adm.active[#adm.active + 1] = user
  adm.aseq[#adm.aseq + 1] = user
  adm.aseq[#adm.aseq + 1] = seq
  adm.users[#adm.users + 1] = user
  adm.seqs[#adm.seqs + 1] = seq
  if shows then
    adm.noshow[#adm.noshow + 1] = shows
    adm.noshow[#adm.noshow + 1] = user
  end
end

local function write_admitted(active, aseq, noshow, admitted, abandoned, events, adm, dropped, tills, nows)
  if #adm.users > 0 then
    redis.call('ZADD', active, unpack(adm.active))
    redis.call('HSET', aseq, unpack(adm.aseq))
    redis.call('INCRBY', admitted, #adm.users)
    redis.call('XADD', events, '*', 'type', 'queue.admits', 'users', table.concat(adm.users, ','),
      'seqs', table.concat(adm.seqs, ','), 'until', tills, 'at', nows)
  end
  if #adm.noshow > 0 then
    redis.call('ZADD', noshow, unpack(adm.noshow))
  end
  if dropped > 0 then
    redis.call('INCRBY', abandoned, dropped)
  end
end
