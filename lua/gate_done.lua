-- gate_done: the concert's side of a completed sale of a concert whose seats are spread over slots of
-- their own, after seat_sell on the schedule's slot: the fan's gate entry of reservation id goes, and
-- when no other entry of theirs still counts (no hold HELD or being paid in any schedule) their queue
-- token of seq becomes DONE and the active slot frees for the next in line. Idempotent: once DONE
-- (or the token no longer ACTIVE) it changes nothing more.
-- KEYS[1] ugate    hash: user -> comma list of '<res>:<until ms>'
-- KEYS[2] active   zset: member user, score activeUntil (ms)
-- KEYS[3] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[4] done     set: seqs whose fan finished
-- KEYS[5] events   stream: the concert's outbox
-- ARGV[1] user  ARGV[2] seq (of the reservation's queue token)  ARGV[3] id (the reservation)  ARGV[4] now (ms)
-- Reply: 1 when the token became DONE, else 0
-- Errors: none
local ugate, active, aseq, done, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local user, seq, id, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local t = tonumber(now)
local live = {}
for rid, u in string.gmatch(redis.call('HGET', ugate, user) or '', '([^,:]+):(%d+)') do
  if rid ~= id and tonumber(u) > t then
    live[#live + 1] = rid .. ':' .. u
  end
end
if #live == 0 then
  redis.call('HDEL', ugate, user)
else
  redis.call('HSET', ugate, user, table.concat(live, ','))
end
if #live == 0 and redis.call('HGET', aseq, user) == seq then
  redis.call('ZREM', active, user)
  redis.call('HDEL', aseq, user)
  redis.call('SADD', done, seq)
  redis.call('XADD', events, '*', 'type', 'queue.done', 'user', user, 'seq', seq, 'at', now)
  return 1
end
return 0
