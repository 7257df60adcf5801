-- gate_apply: the concert's side of the holds and of the steps of reservations whose seat slots are not
-- the concert's own (a line over shards: docs/scaleout.md, "Seat slots"), for a batch of them an instance
-- received meanwhile (one call for the steps that arrived while its previous call was in flight:
-- docs/scaleout.md, "Gated calls share the concert's slot's calls"), each as if alone, in the batch's
-- order. Two kinds of step:
--   H (a hold's first step, before seat_take on the seat's slot): the fan's rate, the token ACTIVE, the
--     fan shown up (off the no-show watch), and one of the fan's maxHoldsPerUser reserved for the
--     reservation until the hold's expiry (lib/gate.lua). Idempotent by id: a second step for the same
--     id reserves nothing more and replies with its time.
--   F (after a step on the seat's slot, or a hold the seat refused): the fan's gate entry of the
--     reservation follows what the step left (lib/follow.lua): until the hold's expiry while HELD, until
--     paying ms after now at least while being paid, gone otherwise; after a sale, once no other entry of
--     the fan's counts, their queue token becomes DONE. Idempotent: the same step again leaves the same
--     state.
-- Each gate entry counts until its time, so an entry whose hold never came (a crash between the steps)
-- or whose follow was lost stops counting by itself when the hold would have lapsed.
-- KEYS[1] cfg      hash: hold (ms), maxholds
-- KEYS[2] places   hash: user -> seq of each fan WAITING in the line
-- KEYS[3] active   zset: member user, score activeUntil (ms)
-- KEYS[4] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[5] ugate    hash: user -> comma list of '<res>:<until ms>', the fan's open holds over every schedule
-- KEYS[6] noshow   zset: member user: a gated call, so the fan has shown up
-- KEYS[7] done     set: seqs whose fan finished
-- KEYS[8] events   stream: the concert's outbox
-- KEYS[9..] rl     string: the rate bucket (its theoretical arrival time, ms) of each H step's user, in order
-- ARGV[1] ulimit (requests/s, 0 = off)  ARGV[2] uburst  ARGV[3] paying (ms: how long a claim keeps counting,
-- PayingGate)
-- ARGV[4..] steps: seven items each: kind (H|F), user, id (the reservation), seq (of the fan's queue token),
-- status (F: the reservation's after its step, HELD, PAYING, PAID; anything else removes the entry; H: ''),
-- expires (F: the reservation's expiry, ms; H: ''), now (ms)
-- Reply: one item a step, in order: H, the hold's expiry (ms), which seat_take gives the reservation, or
--        the code of its refusal (below); F, 1 when the token became DONE, else 0
-- Event: queue.done user seq at, when a sale makes a token DONE
-- Errors: none of the call; an H step's refusal, as its item: NOT_FOUND, QUEUE_NOT_ACTIVE,
--         QUEUE_TOKEN_EXPIRED, HOLD_LIMIT_REACHED, RATE_LIMITED
local cfg, places, active, aseq, ugate, noshow = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local done, events = KEYS[7], KEYS[8]
local ulimit, uburst, paying = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
--#include gate
--#include follow
local out, rl = {}, 8
for i = 4, #ARGV, 7 do
  local kind, user, id, seq, now = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 6]
  if kind == 'H' then
    rl = rl + 1
    local expires, refused = gate_reserve(cfg, KEYS[rl], aseq, active, places, noshow, ugate, user, seq, id,
      tonumber(now), ulimit, uburst)
    if expires then
      out[#out + 1] = expires
    else
      out[#out + 1] = string.match(refused.err, '([%u_]+)$') -- the code alone ('ERR ' may lead it)
    end
  else
    out[#out + 1] = follow(ugate, active, aseq, done, events, {id = id, user = user, seq = tonumber(seq),
      status = ARGV[i + 4], expiresAt = tonumber(ARGV[i + 5])}, tonumber(now), now, paying)
  end
end
return out
