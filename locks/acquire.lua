-- Grants a lease. KEYS[1]: lock key (a hash), KEYS[2]: its fence counter, in
-- the same hash tag. ARGV: token, ttl ms, holder, mode ("acquire", "preempt",
-- "reenter"), min fence, nonce.
-- Reply: {status, token, holder, fence, since ms, ttl ms, count}
--   status 1: granted; 2: this token already holds it (a retried call or a
--   re-entry: same grant); 3: granted by taking over another holder;
--   0: held by another (token left empty; the lock is marked 'w' so its
--   release is announced to the waiters); -1: reenter with a token that
--   is not current.
local cur = redis.call('HMGET', KEYS[1], 't', 'h', 'f', 's', 'n', 'r')
local ttl = tonumber(ARGV[2])
if cur[1] == ARGV[1] then
  local n = tonumber(cur[5])
  if ARGV[4] == 'reenter' and cur[6] ~= ARGV[6] then
    n = redis.call('HINCRBY', KEYS[1], 'n', 1)
    redis.call('HSET', KEYS[1], 'r', ARGV[6])
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {2, cur[1], cur[2], tonumber(cur[3]), tonumber(cur[4]), ttl, n}
end
if ARGV[4] == 'reenter' then
  return {-1, '', cur[2] or '', tonumber(cur[3]) or 0, tonumber(cur[4]) or 0, redis.call('PTTL', KEYS[1]), tonumber(cur[5]) or 0}
end
local status = 1
if cur[1] then
  if ARGV[4] ~= 'preempt' then
    redis.call('HSET', KEYS[1], 'w', 1)
    return {0, '', cur[2], tonumber(cur[3]), tonumber(cur[4]), redis.call('PTTL', KEYS[1]), tonumber(cur[5])}
  end
  status = 3
end
-- fence = max(counter + 1, server time in microseconds, min fence + 1): it
-- grows strictly while the counter lives and keeps growing after every key
-- was lost, as long as the server clock does not step back.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local f = now
local c = tonumber(redis.call('GET', KEYS[2]) or '0')
if c + 1 > f then f = c + 1 end
local floor = tonumber(ARGV[5])
if floor + 1 > f then f = floor + 1 end
local fs = string.format('%.0f', f)
local since = math.floor(now / 1000)
redis.call('SET', KEYS[2], fs)
if cur[1] then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], 't', ARGV[1], 'h', ARGV[3], 'f', fs, 's', string.format('%.0f', since), 'n', 1)
redis.call('PEXPIRE', KEYS[1], ttl)
return {status, ARGV[1], ARGV[3], f, since, ttl, 1}
