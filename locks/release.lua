-- Drops one hold of a lease held by owner (the value is described in
-- acquire.lua); frees the key at zero and, if an acquire was turned away
-- while it was held, announces it. KEYS[1]: lock key. ARGV: owner, channel,
-- nonce. Reply: holds left (0: freed), or -1 when owner does not hold it.
local v = redis.call('GET', KEYS[1])
if not v then
  return -1
end
local e = #ARGV[1]
if string.sub(v, 1, e) ~= ARGV[1] or string.byte(v, e + 1) ~= 32 then
  return -1
end
if string.sub(v, e + 2, e + 7) == '1 - - ' then
  -- the common case: one hold, no nonce, nobody turned away
  redis.call('DEL', KEYS[1])
  return 0
end
local n, r, w, rest = string.match(v, '^(%d+) (%S+) (%S) (.*)$', e + 2)
n = tonumber(n)
if r == ARGV[3] then
  -- a retried release whose first attempt already counted
  return n
end
n = n - 1
if n > 0 then
  redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. n .. ' ' .. ARGV[3] .. ' ' .. w .. ' ' .. rest, 'KEEPTTL')
  return n
end
redis.call('DEL', KEYS[1])
if w == 'w' then redis.call('PUBLISH', ARGV[2], KEYS[1]) end
return 0
