-- token_done: a fan's sale ended their token on their shard (gate_apply, mode S: their last open hold paid);
-- here, on the concert's slot, the ACTIVE token of that seq becomes DONE too, freeing its slot for the next
-- in line. Idempotent: a token of another seq, or none, is left as it is.
-- KEYS[1] active  zset: member user, score activeUntil (ms)
-- KEYS[2] aseq    hash: user -> seq of the ACTIVE token
-- KEYS[3] done    set: seqs whose fan finished
-- KEYS[4] events  stream: the concert's outbox
-- ARGV[1] user  ARGV[2] seq  ARGV[3] now (ms)
-- Reply: 1 when the token became DONE here, else 0
-- Event: queue.done user seq at
-- Errors: none.
local active, aseq, done, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, seq, now = ARGV[1], ARGV[2], ARGV[3]
--#include end_token
if redis.call('HGET', aseq, user) ~= seq then
  return 0
end
end_token(active, aseq, events, user, seq, 'done', now)
redis.call('SADD', done, seq)
return 1
