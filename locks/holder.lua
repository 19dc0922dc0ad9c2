-- Reports who holds a lock (the value is described in acquire.lua).
-- KEYS[1]: lock key.
-- Reply: {holder, fence, since µs, pttl ms, count} or nil when free.
local v = redis.call('GET', KEYS[1])
if not v then
  return nil
end
local tl, p = string.match(v, '^(%d+):()')
local n, f, s, h = string.match(v, '^ (%d+) %S+ %S (%d+) (%d+) (.*)$', p + tonumber(tl))
return {h, tonumber(f), tonumber(s), redis.call('PTTL', KEYS[1]), tonumber(n)}
