-- Drops one hold of a lease held by token; frees the key at zero and, if
-- somebody was turned away while it was held ('w'), announces it.
-- KEYS[1]: lock key. ARGV: token, channel, nonce.
-- Reply: holds left (0: freed), or -1 when the token does not hold the key.
local cur = redis.call('HMGET', KEYS[1], 't', 'r', 'w', 'n')
if cur[1] ~= ARGV[1] then
  return -1
end
if cur[2] == ARGV[3] then
  -- a retried release whose first attempt already counted
  return tonumber(cur[4])
end
local n = tonumber(cur[4]) - 1
if n > 0 then
  redis.call('HSET', KEYS[1], 'n', n, 'r', ARGV[3])
  return n
end
redis.call('DEL', KEYS[1])
if cur[3] then redis.call('PUBLISH', ARGV[2], KEYS[1]) end
return 0
