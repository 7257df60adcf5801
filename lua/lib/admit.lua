-- admit(adm, user, seq, tills, shows): notes the admission of user's arrival seq in adm, a round's
-- admissions (queue_tick, line_admit), until tills (its activeUntil, ms, printed), on the no-show watch
-- until shows when shows is not nil; write_admitted(active, aseq, noshow, admitted, abandoned, adm,
-- dropped) then writes them all at once: a ZADD, an HSET and a ZADD for the round instead of three
-- commands a fan, and the round's counts (admitted, and the dropped in abandoned). A round admits at
-- most a tick's batch (1,000), within what unpack can pass.
local function admit(adm, user, seq, tills, shows)
  adm.active[#adm.active + 1] = tills
  adm.active[#adm.active + 1] = user
  adm.aseq[#adm.aseq + 1] = user
  adm.aseq[#adm.aseq + 1] = seq
  if shows then
    adm.noshow[#adm.noshow + 1] = shows
    adm.noshow[#adm.noshow + 1] = user
  end
end

local function write_admitted(active, aseq, noshow, admitted, abandoned, adm, dropped)
  if #adm.active > 0 then
    redis.call('ZADD', active, unpack(adm.active))
    redis.call('HSET', aseq, unpack(adm.aseq))
    redis.call('INCRBY', admitted, #adm.aseq / 2)
  end
  if #adm.noshow > 0 then
    redis.call('ZADD', noshow, unpack(adm.noshow))
  end
  if dropped > 0 then
    redis.call('INCRBY', abandoned, dropped)
  end
end
