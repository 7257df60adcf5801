-- gate_follow: the fan's gate entry of a reservation (see gate_hold) follows a step on its schedule's
-- seat slot, when that slot is not the concert's: until the hold's expiry while HELD, until paying ms
-- after now at least while being paid, gone once cancelled, lapsed or refused; after a sale, once no
-- other entry of the fan's counts, their queue token becomes DONE (lib/follow.lua). Idempotent: the same
-- call again leaves the same state.
-- KEYS[1] ugate    hash: user -> comma list of '<res>:<until ms>'
-- KEYS[2] active   zset: member user, score activeUntil (ms)
-- KEYS[3] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[4] done     set: seqs whose fan finished
-- KEYS[5] events   stream: the concert's outbox
-- ARGV[1] user  ARGV[2] id (the reservation)  ARGV[3] seq (of its queue token)  ARGV[4] status (the
-- reservation's after the step: HELD, PAYING, PAID; anything else removes the entry)  ARGV[5] expires (its expiry, ms)
-- ARGV[6] now (ms)  ARGV[7] paying (ms: how long a claim keeps counting, PayingGate)
-- Reply: 1 when the token became DONE, else 0
-- Errors: none
local ugate, active, aseq, done, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local user, id, seq, status, expires, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local paying = tonumber(ARGV[7])
--#include follow
return follow(ugate, active, aseq, done, events,
  {id = id, user = user, seq = tonumber(seq), status = status, expiresAt = tonumber(expires)}, tonumber(now), now, paying)
