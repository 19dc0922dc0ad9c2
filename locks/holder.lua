-- Reports who holds a lock. KEYS[1]: lock key.
-- Reply: {holder, fence, since ms, pttl ms, count} or nil when free.
local v = redis.call('HMGET', KEYS[1], 'h', 'f', 's', 'n')
if not v[1] then
  return nil
end
return {v[1], tonumber(v[2]), tonumber(v[3]), redis.call('PTTL', KEYS[1]), tonumber(v[4])}
