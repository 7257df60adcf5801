-- draw_place: places one batch of a sealed pre-queue's entrants in the line, in draw order: the entrant
-- at draw place p gets arrival seq base+p. The batch applies only when it starts at the draw's cursor
-- (placed), so a batch sent twice, or by two schedulers, is placed once; the last batch marks the draw
-- done (drawnAt, digest), from which on the tick admits.
-- KEYS[1] places  hash: user -> seq of each fan WAITING in the line
-- KEYS[2] draw    hash: sealed, base, n, placed, digest, drawnAt
-- KEYS[3] dkeys   string: every entrant's raw 32-byte key in draw order
-- KEYS[4] events  stream: the concert's outbox
-- KEYS[5] drawn   list: '<seq>|<user>' of the entrants placed, in draw order (the tick takes it first)
-- ARGV[1] from: the draw place before this batch's first (the cursor it expects)
-- ARGV[2] keys: the batch's raw 32-byte keys, concatenated in draw order
-- ARGV[3] digest: the hex SHA-256 of every key's hex line (written with the last batch)
-- ARGV[4] now (ms)
-- ARGV[5] inline: '1' places the batch in the line here; '0' for a line spread over shards, whose
--         line_place calls placed it in the shards before this call
-- ARGV[6..] user: the batch's users in draw order
-- Reply: {placed (the cursor after this call), applied (0|1)}
-- Errors: DRAW_NOT_READY (the pre-queue is not sealed)
local places, draw, dkeys, events, drawn = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local from, keys, digest, now, inline = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local d = redis.call('HMGET', draw, 'sealed', 'base', 'n', 'placed')
if d[1] ~= '1' then
  return redis.error_reply('DRAW_NOT_READY')
end
local base, n, placed = tonumber(d[2]), tonumber(d[3]), tonumber(d[4])
local count = #ARGV - 5
if placed ~= from or from + count > n or #keys ~= count * 32 then
  return {placed, 0}
end
--#include line
local users, fields, entries = {}, {}, {}
for i = 1, count do
  local user, s = ARGV[5 + i], string.format('%d', base + from + i)
  fields[2 * i - 1], fields[2 * i], entries[i] = user, s, entry(s, user)
  users[i] = user
end
if count > 0 then
  if inline == '1' then -- one call of each for the batch: a thousand calls cost a millisecond
    redis.call('HSET', places, unpack(fields))
    redis.call('RPUSH', drawn, unpack(entries))
  end
  if from == 0 then
    redis.call('SETRANGE', dkeys, n * 32 - 1, '\0') -- allocate the keys string once, not grow it per batch
  end
  redis.call('SETRANGE', dkeys, from * 32, keys)
end
placed = from + count
redis.call('HSET', draw, 'placed', placed)
redis.call('XADD', events, '*', 'type', 'draw.place', 'from', from, 'users', table.concat(users, ','), 'at', now)
if placed == n then
  redis.call('HSET', draw, 'drawnAt', now, 'digest', digest)
  local seed = redis.call('HGET', draw, 'seed') or ''
  redis.call('XADD', events, '*', 'type', 'draw.done', 'n', n, 'digest', digest, 'seed', seed, 'at', now)
end
return {placed, 1}
