-- Counts a lease for its owner unless the owner has too many live ones.
-- KEYS[1]: the owner's sorted set (members: leases, scores: expiry ms).
-- ARGV: lease, expiry ms, max, now ms, key ttl ms.
-- Reply: {1, 0} counted; {0, first expiry ms} over max.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[4])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2])}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, 0}
