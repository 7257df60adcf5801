-- queue_tick: one admission round for one concert. Lapses ACTIVE tokens past their activeUntil, then,
-- unless paused or a sale's draw is not in place yet (cfg opens set, draw drawnAt not), admits min(free
-- slots, rate budget, batch) fans from the head of the line. Atomic, so any number of schedulers may run
-- it at once without admitting past capacity or rate. With aps
-- (activePerSeat) > 0 it admits nobody past aps x the seats AVAILABLE now; once sold out, nobody. With
-- abandon (abandonAfter) > 0 a fan at the head not seen for that long is dropped (EXPIRED), not admitted,
-- and the next one takes the place; the head then moves past them too. Once the line is empty (and
-- no draw is still to place entrants in it) seen starts afresh above the newest seq: it holds 6 bytes
-- for each arrival since the line last emptied.
-- KEYS[1]  cfg       hash: cap, rate, ttl (ms), paused, aps, abandon (ms), noshow (ms), opens (ms), seenbase
-- KEYS[2]  places    hash: user -> seq of each fan WAITING in the line
-- KEYS[3]  active    zset: member user, score activeUntil (ms)
-- KEYS[4]  aseq      hash: user -> seq of the ACTIVE token
-- KEYS[5]  head      string: highest seq that left the line by admission
-- KEYS[6]  bucket    hash: tok, ts (ms): the admission rate budget
-- KEYS[7]  admitted  string: admissions so far
-- KEYS[8]  left      zset: member seq, score seq
-- KEYS[9]  leftlog   zset: member seq, score leave ordinal
-- KEYS[10] events    stream: the concert's outbox
-- KEYS[11] draw      hash: the on-sale's draw; drawnAt once every entrant is placed
-- KEYS[12] inv       hash: avail, soldout: the inventory the line protects (carried from the seat slots'
--                    counts by the tick: below, or by inventory_carry)
-- KEYS[13] holds     zset: member res, score expires (ms): lapsed but unswept holds count as available
-- KEYS[14] abandoned string: fans dropped so far for not polling (abandonAfter) or not showing up
-- KEYS[15] noshow    zset: member user, score the deadline (ms) of their first gated call after admission
-- KEYS[16] seen      string: 6 bytes per arrival at byte (seq - seenbase - 1) x 6, when its fan was last
--                    seen (Unix ms, big-endian; zero never), written by the joins and by the instances
--                    once a second
-- KEYS[17] seq       string: arrival sequence (the newest seq: where seen starts afresh)
-- KEYS[18] order     list: '<seq>|<user>' of the line's arrivals in seq order
-- KEYS[19] drawn     list: '<seq>|<user>' of a sale's entrants in draw order, taken before order's
-- KEYS[20..] inv|holds  a seat slot's count and HELD set, in pairs, for each seat slot of a line of one
--                   shard (all in the concert's own slot): the round carries their counts onto inv first
--                   (lib/carry.lua), so the round and the scripts after it read the seats as they are
-- ARGV[1] now (ms)
-- ARGV[2] batch: most lapses and most admissions in this call
-- With noshow > 0 an ACTIVE fan still in noshow at their deadline (no gated call since admission) is
-- EXPIRED first, freeing the slot.
-- Events: one for each kind of fan the round took, naming the users and their seqs as comma lists in
-- the order taken: queue.lapses, queue.noshows, queue.abandons (with seens, when each was last seen),
-- queue.admits (with until)
-- Reply: {admitted, lapsed, waiting, active, abandoned, noshows} (counts after the tick; abandoned and
--        noshows: in this tick)
-- Errors: NOT_FOUND (no such concert in Redis)
local cfg, places, active, aseq, head = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local bucket, admitted, left, leftlog, events = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local draw, inv, holds, abandoned, noshow = KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15]
local seen, seq, order, drawn = KEYS[16], KEYS[17], KEYS[18], KEYS[19]
local now, batch = tonumber(ARGV[1]), tonumber(ARGV[2])
local slots = {unpack(KEYS, 20)}
local nows = string.format('%d', now) -- printed once for the writes
local conf = redis.call('HMGET', cfg, 'cap', 'rate', 'ttl', 'paused', 'aps', 'abandon', 'noshow', 'opens', 'seenbase')
if not conf[1] then
  return redis.error_reply('NOT_FOUND')
end
local gated = conf[8] and redis.call('HEXISTS', draw, 'drawnAt') == 0
local opens = tonumber(conf[8] or '0') -- a pre-queue entrant's silence counts from the opening
local cap, rate, ttl = tonumber(conf[1]), tonumber(conf[2]), tonumber(conf[3])

--#include sessions
local lapsed, noshows = end_sessions(active, aseq, noshow, abandoned, events, now, nows, batch, 0)

--#include budget
--#include admit
--#include seen
--#include line
--#include leaves
local tok, ts = budget(bucket, rate, now)
local n = 0
local free = cap - redis.call('ZCARD', active)
local want = math.min(free, math.floor(tok), batch)
local aps = tonumber(conf[5] or '0')
--#include stock
--#include carry
local avail, soldout
if #slots > 0 then -- a line of one shard: its seat slots' counts carried here, in this call
  avail, soldout = carry_slots(inv, events, slots, nows)
  if soldout == nil then
    return redis.error_reply('NOT_FOUND')
  end
else
  avail, soldout = stock(inv, holds, slots, now, aps > 0)
end
if soldout then
  want = 0
elseif aps > 0 then
  want = math.min(want, aps * avail - redis.call('ZCARD', active))
end
local dropped = 0
if conf[4] ~= '1' and not gated and want > 0 then
  local abandon, show = tonumber(conf[6] or '0'), tonumber(conf[7] or '0')
  local till = now + ttl
  -- each number a write takes, printed once (redis.call prints a Lua number with %.17g each time)
  local tills, shows = string.format('%d', till), string.format('%d', now + show)
  local base = tonumber(conf[9] or '0')
  local last
  local adm = new_round()
  local taken = 0 -- entries taken from the lists, the stale ones of fans who left included
  while n < want and n + dropped < batch and taken < batch + 4096 do
    local users, seqs, top, got = take(places, drawn, order, math.min(want - n, batch - n - dropped),
      batch + 4096 - taken)
    if not top then break end
    taken, last = taken + got, top
    -- the seen fields of this chunk in one read when its seqs are near each other (few left between)
    local span, lo = nil, 1
    if abandon > 0 and #seqs > 0 then
      lo = math.max(1, tonumber(seqs[1]) - base)
      local hi = tonumber(seqs[#seqs]) - base
      if hi >= lo and hi - lo < #seqs + 64 then
        span = redis.call('GETRANGE', seen, (lo - 1) * 6, hi * 6 - 1)
      end
    end
    for i = 1, #users do
      local user, seq = users[i], seqs[i]
      local at, last_seen = tonumber(seq) - base, opens
      if abandon > 0 and at > 0 then
        local b
        if span then
          b = string.sub(span, (at - lo) * 6 + 1, (at - lo) * 6 + 6)
        else
          b = redis.call('GETRANGE', seen, (at - 1) * 6, at * 6 - 1)
        end
        last_seen = math.max(last_seen, seen_time(b))
      end
      if abandon > 0 and last_seen + abandon <= now then
        dropped = dropped + 1
        drop(adm, user, seq, last_seen)
      else
        admit(adm, user, seq, tills, show > 0 and shows or nil)
        n = n + 1
      end
    end
  end
  write_admitted(active, aseq, noshow, admitted, abandoned, events, adm, tills, nows)
  tok = tok - n
  -- the head moves past every fan who left the line here, admitted, dropped or gone before (a stale
  -- entry may be behind the head: one left before the line emptied and a join was admitted at once)
  pass_head(head, left, leftlog, last, batch)
end
redis.call('HSET', bucket, 'tok', string.format('%.6f', tok), 'ts', ts)
local waiting = redis.call('HLEN', places)
if waiting == 0 and not gated and redis.call('EXISTS', seen, order, drawn) > 0 then
  -- nobody waits and no entrant is still to be placed: every arrival seen has a field for is gone, and
  -- what the lists hold is stale
  redis.call('DEL', seen, order, drawn)
  redis.call('HSET', cfg, 'seenbase', redis.call('GET', seq) or '0')
end
return {n, lapsed, waiting, redis.call('ZCARD', active), dropped, noshows}
