-- line_seal: closes one shard's pre-queue at a sale's opening (the first step of sealing a sharded
-- line's draw; draw_seal then reserves the entrants' seqs on the concert's slot with the sum of the
-- shards' counts). Once sealed the shard takes no entrant and loses none (prequeue_leave refuses), so
-- every sealer reads the same count. The caller has seen the opening pass.
-- KEYS[1] draw  hash: sealed ('1' once this shard's pre-queue is closed)
-- KEYS[2] pre   zset: this shard's pre-queue entrants
-- Reply: the shard's entrants
-- Errors: none.
local draw, pre = KEYS[1], KEYS[2]
redis.call('HSET', draw, 'sealed', '1')
return redis.call('ZCARD', pre)
