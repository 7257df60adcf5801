-- seal(seq, draw, events, n, now): a sale's pre-queue is sealed with its n entrants (draw_seal, or the
-- first join past the opening): their n arrival seqs reserved ahead of every later join (base: the seq
-- before them), the draw hash sealed, and its draw.seal event.
local function seal(seq, draw, events, n, now)
  local base = tonumber(redis.call('GET', seq) or '0')
  redis.call('INCRBY', seq, n)
  redis.call('HSET', draw, 'sealed', '1', 'base', base, 'n', n, 'placed', 0)
  redis.call('XADD', events, '*', 'type', 'draw.seal', 'n', n, 'base', base, 'seq', base + n, 'at', now)
end
