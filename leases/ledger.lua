-- Moves the expiry of a counted lease, or (expiry 0) stops counting it.
-- KEYS[1]: the owner's sorted set. ARGV: lease, expiry ms or 0, key ttl ms.
if ARGV[2] == '0' then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
local n = redis.call('ZADD', KEYS[1], 'XX', 'CH', ARGV[2], ARGV[1])
if n > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return n
