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
--#include gate_entries
--#include end_token
local live = gate_live(ugate, user, t, id)
gate_write(ugate, user, live)
if #live == 0 and redis.call('HGET', aseq, user) == seq then
  end_token(active, aseq, events, user, seq, 'done', now)
  redis.call('SADD', done, seq)
  return 1
end
return 0
