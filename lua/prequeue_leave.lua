-- prequeue_leave: a fan leaves a sale's pre-queue before it is sealed (once sealed, the entrant count is
-- fixed and the entrant is drawn; they leave the line with the token of their place instead).
-- KEYS[1] pre     zset: the pre-queue's entrants
-- KEYS[2] draw    hash: sealed ('1' once the pre-queue is closed)
-- KEYS[3] events  stream: the concert's outbox
-- ARGV[1] user id
-- ARGV[2] now (ms)
-- Reply: 'PREQUEUE' (left the pre-queue), 'NONE' (not in it, or sealed already)
-- Errors: none.
local pre, draw, events = KEYS[1], KEYS[2], KEYS[3]
local user, now = ARGV[1], ARGV[2]
if redis.call('HGET', draw, 'sealed') == '1' then
  return 'NONE'
end
if redis.call('ZREM', pre, user) == 0 then
  return 'NONE'
end
redis.call('XADD', events, '*', 'type', 'queue.unprequeue', 'user', user, 'at', now)
return 'PREQUEUE'
