-- Shared by the lock scripts: prepended to each of them when the library is built.
--
-- A held lock is the string '<token> <owner>' under KEYS[1], with the lease as its PX. An owner is
-- '<client id>:<acquisition>:<grant ms>': the last part is how long a lock granted to that owner
-- while it waits is kept for it before its client claims it (a waiter that died costs no more).
-- Waiting owners queue beside the lock, one entry per waiting client: KEYS[3] orders them by
-- arrival, KEYS[4] holds when each entry expires unless its client refreshes it (server clock, ms).
-- Fencing tokens never go below the server's clock in microseconds, so a counter lost to a restart
-- or a failover starts again above every token handed out before (KEYS[2] only breaks ties); they
-- stay below 2^53, where Lua's numbers are exact (next_token).

local function clock()
  local t = redis.call('time')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end

local function digits(n)
  return string.format('%.0f', n)
end

local function not_a_lock(key)
  error({err = 'WRONGTYPE corolock: ' .. key .. ' holds a value that is not a lock'})
end

-- The token and owner of a held lock.
local function holder_of(value, key)
  local token, owner = string.match(value, '^(%d+) (%x+:%d+:%d+)$')
  if not token then
    not_a_lock(key)
  end
  return tonumber(token), owner
end

local function grant_ms(owner)
  return tonumber(string.match(owner, ':(%d+)$')) or 2000
end

-- Removes `members` from the sorted set or hash `key` (`command` zrem or hdel), in chunks that
-- unpack() can take.
local function remove_all(command, key, members)
  for i = 1, #members, 1000 do
    redis.call(command, key, unpack(members, i, math.min(i + 999, #members)))
  end
end

-- Drops the queue entries whose clients stopped refreshing them; returns their owners.
local function prune(q, qx, now_ms)
  local gone = redis.call('zrangebyscore', qx, '-inf', now_ms)
  if #gone > 0 then
    remove_all('zrem', q, gone)
    redis.call('zremrangebyscore', qx, '-inf', now_ms)
  end
  return gone
end

local function first_waiter(q)
  return redis.call('zrange', q, 0, 0)[1]
end

local function dequeue(q, qx, owner)
  redis.call('zrem', q, owner)
  redis.call('zrem', qx, owner)
end

-- Adds `owner` at the end of the queue, or keeps its place and renews its entry (ZADD NX leaves a
-- present entry's place alone).
local function enqueue(q, qx, owner, now_ms, ttl)
  local last = redis.call('zrange', q, -1, -1, 'withscores')
  redis.call('zadd', q, 'nx', last[2] and tonumber(last[2]) + 1 or 1, owner)
  redis.call('zadd', qx, now_ms + ttl, owner)
  if redis.call('pttl', q) < ttl then -- the sets vanish with their last live entry
    redis.call('pexpire', q, ttl)
    redis.call('pexpire', qx, ttl)
  end
end

-- Whether anyone waits: the uncontended paths skip every queue command when nobody does (the
-- queue's two sets exist together: the same entries, the same expiry).
local function has_queue(keys)
  return redis.call('exists', keys[3]) == 1
end

-- Lua counts in doubles, exact only up to 2^53: past that `last + 1` is `last` again and tokens
-- would stop rising. The fence is refused from there on (real tokens, microseconds of the clock,
-- are about 2^51 and reach 2^53 in the year 2255).
local max_token = 9007199254740991 -- 2^53 - 1

-- The next fencing token of the fence `fence`, for a lease of `px` ms. One SET ... GET in the
-- usual case (the last token lies below the clock); a second SET when it does not. A fence that is
-- not a counter of ours (not decimal digits), or past 2^53 - 1, is refused and its value put back
-- (a Lua error does not undo the writes before it; the value's expiry is not restored).
local function next_token(fence, px, now_us)
  if now_us > max_token then
    error({err = 'ERR corolock: the clock is past 2^53 - 1 microseconds, where fencing tokens cannot rise exactly'})
  end
  local ttl = math.max(3600000, 2 * px)
  local last = redis.call('set', fence, digits(now_us), 'px', ttl, 'get')
  if not last then
    return now_us
  end
  if not string.match(last, '^%d+$') then
    redis.call('set', fence, last)
    error({err = 'WRONGTYPE corolock: ' .. fence .. ' holds a value that is not a fencing counter'})
  end
  local floor = tonumber(last) + 1 -- rounded past 2^53, and refused below
  if floor <= now_us then
    return now_us
  end
  if floor > max_token then
    redis.call('set', fence, last)
    error({err = 'ERR corolock: ' .. fence .. ' is past 2^53 - 1, where fencing tokens cannot rise exactly'})
  end
  redis.call('set', fence, digits(floor), 'px', ttl)
  return floor
end

-- Sets the lock in `owner`'s name for `px` ms with a fresh fencing token; `owner` leaves the queue
-- (`queued`: the queue exists).
local function give(keys, owner, px, now_us, queued)
  local token = next_token(keys[2], px, now_us)
  redis.call('set', keys[1], digits(token) .. ' ' .. owner, 'px', px)
  if queued then
    dequeue(keys[3], keys[4], owner)
  end
  return token
end

-- Tells the waiting clients that `owner` was granted the lock. A user without rights to the
-- channel grants silently: the grantee's client then finds out by refreshing its queue entry.
local function announce(channel, publish, token, owner)
  local message = 'g ' .. digits(token) .. ' ' .. owner
  if redis.acl_check_cmd == nil or redis.acl_check_cmd(publish, channel, message) then
    redis.call(publish, channel, message)
  end
end

-- The lock is free and the queue exists (pruned): the first waiter leaves it and gets the lock,
-- granted and announced, unless that is `owner`. Returns that first waiter: nil when nobody waits,
-- `owner` when it may take the lock (it is out of the queue then).
local function grant_first(keys, owner, now_us, channel, publish)
  local popped = redis.call('zpopmin', keys[3])
  local first = popped[1]
  if first then
    if first ~= owner then
      -- A fence that refuses (not a counter of ours) must not cost the waiter its place: it is put
      -- back with its arrival score before the error goes on (a Lua error undoes nothing). pcall
      -- hands the error over as its text: raised again as an error reply, it keeps its own code
      -- (WRONGTYPE ...) instead of Lua's "ERR user_script:N:" in front.
      local ok, token = pcall(give, keys, first, grant_ms(first), now_us, false)
      if not ok then
        redis.call('zadd', keys[3], popped[2], first)
        error(type(token) == 'table' and token or {err = token})
      end
      announce(channel, publish, token, first)
    end
    redis.call('zrem', keys[4], first)
  end
  return first
end

