-- A round's admissions and drops (queue_tick, line_admit), noted as it goes in new_round()'s lists and
-- written at its end.
-- admit(adm, user, seq, tills, shows): the admission of user's arrival seq, until tills (its
-- activeUntil, ms, printed), on the no-show watch until shows when shows is not nil.
-- drop(adm, user, seq, seen): user's arrival seq dropped for silence, last seen at seen (ms).
-- write_admitted(active, aseq, noshow, admitted, abandoned, events, adm, tills, nows) then writes them
-- all at once: a ZADD, an HSET and a ZADD for the round instead of three commands a fan, the round's
-- counts (admitted, and the dropped in abandoned), and one event for each kind instead of an XADD a
-- fan: queue.abandons (users, seqs, seens) and queue.admits (users, seqs; until, at), comma lists in
-- the order the round took them. A round takes at most a tick's batch (1,000), within what unpack can
-- pass.
local function new_round()
  return {active = {}, aseq = {}, noshow = {}, users = {}, seqs = {}, dusers = {}, dseqs = {}, dseens = {}}
end

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

local function drop(adm, user, seq, seen)
  adm.dusers[#adm.dusers + 1] = user
  adm.dseqs[#adm.dseqs + 1] = seq
  adm.dseens[#adm.dseens + 1] = string.format('%d', seen)
end

local function write_admitted(active, aseq, noshow, admitted, abandoned, events, adm, tills, nows)
  if #adm.dusers > 0 then
    redis.call('INCRBY', abandoned, #adm.dusers)
    redis.call('XADD', events, '*', 'type', 'queue.abandons', 'users', table.concat(adm.dusers, ','),
      'seqs', table.concat(adm.dseqs, ','), 'seens', table.concat(adm.dseens, ','), 'at', nows)
  end
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
end
