-- Extends a lease held by token. KEYS[1]: lock key. ARGV: token, ttl ms.
-- Reply: the fence when extended, 0 when the token does not hold the key.
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return tonumber(redis.call('HGET', KEYS[1], 'f'))
