-- concert_load: loads a concert's catalog and queue settings into Redis (from Postgres, the record).
-- KEYS[1] meta    hash: title, venue
-- KEYS[2] cfg     hash: cap, rate, ttl (ms), hold (ms), maxholds, paused ('0'|'1')
-- KEYS[3] events  stream: the concert's outbox
-- ARGV[1] title  ARGV[2] venue  ARGV[3] cap  ARGV[4] rate  ARGV[5] ttl ms  ARGV[6] hold ms
-- ARGV[7] maxholds  ARGV[8] paused ('0'|'1')  ARGV[9] now (ms)
-- Reply: 1 when loaded, 0 when the concert was already there (nothing written).
-- Errors: none.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'title', ARGV[1], 'venue', ARGV[2])
redis.call('HSET', KEYS[2], 'cap', ARGV[3], 'rate', ARGV[4], 'ttl', ARGV[5], 'hold', ARGV[6],
  'maxholds', ARGV[7], 'paused', ARGV[8])
redis.call('XADD', KEYS[3], '*', 'type', 'concert.load', 'at', ARGV[9])
return 1
