-- Extends a lease held by owner (the value is described in acquire.lua).
-- KEYS[1]: lock key. ARGV: owner, ttl ms.
-- Reply: the fence when extended, 0 when owner does not hold the key.
local v = redis.call('GET', KEYS[1])
local e = #ARGV[1]
if not v or string.sub(v, 1, e) ~= ARGV[1] or string.byte(v, e + 1) ~= 32 then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return tonumber(string.match(v, '^%d+ %S+ %S (%d+)', e + 2))
