-- One connection to a draftfs daemon, by socket path, kept alive: when the
-- daemon goes away (restart, crash) the client reconnects with
-- exponential backoff and, once initialized again, tells its owner, which
-- sends every open buffer again (a new daemon knows no buffers).

local rpc = require('draftfs.rpc')
local uv = vim.loop

local M = {}

local Client = {}
Client.__index = Client

-- clients maps a socket path to its Client.
local clients = {}

-- hooks are the owner's callbacks, set by setup: on_ready(client),
-- on_down(client), on_notify(client, method, params).
local hooks
local cfg

function M.configure(config, h)
  cfg, hooks = config, h
end

-- get returns the client of socket, connecting a new one.
function M.get(socket)
  local c = clients[socket]
  if not c then
    c = setmetatable({
      socket = socket,
      state = 'down', -- down, connecting, ready, stopped
      backoff = cfg.reconnect.initial_ms,
      busy = 0, -- buffer requests without an answer yet
      idle = {}, -- callbacks waiting for busy == 0
      waiters = {}, -- callbacks waiting for the connection
    }, Client)
    clients[socket] = c
    c:connect()
  end
  return c
end

function M.all()
  local list = {}
  for _, c in pairs(clients) do
    list[#list + 1] = c
  end
  return list
end

function Client:connect()
  if self.state == 'stopped' then
    return
  end
  self.state = 'connecting'
  rpc.connect(self.socket, {
    on_notify = function(method, params)
      if self.state == 'ready' then -- the daemon may notify before answering initialize
        hooks.on_notify(self, method, params)
      end
    end,
    on_close = function()
      self:lost()
    end,
  }, function(err, conn)
    if err then
      if type(err) == 'string' and err:find('^draftfs: ') and self.refused ~= err then
        -- Not the user's daemon: say so once, keep checking.
        self.refused = err
        vim.notify(err, vim.log.levels.ERROR)
      end
      self:retry()
      return
    end
    self.refused = nil
    if self.state == 'stopped' then
      conn:close()
      return
    end
    self.conn = conn
    conn:request('initialize', {
      clientInfo = { name = 'draftfs.nvim' },
      positionEncodings = { 'utf-8' },
    }, function(ierr, info)
      if ierr or type(info) ~= 'table' or info.positionEncoding ~= 'utf-8' then
        -- A daemon that cannot count in bytes is not one this plugin
        -- speaks to; try again later like any other failure.
        conn:close()
        return
      end
      if conn ~= self.conn or self.state ~= 'connecting' then
        return
      end
      self.info = info
      self.root = info.workspace
      self.real_root = uv.fs_realpath(info.workspace) or info.workspace
      self.mount = info.mount ~= '' and info.mount or nil
      self.state = 'ready'
      self.backoff = cfg.reconnect.initial_ms
      hooks.on_ready(self)
      local waiters = self.waiters
      self.waiters = {}
      for _, cb in ipairs(waiters) do
        cb(true)
      end
    end)
  end)
end

-- lost runs when the connection closed.
function Client:lost()
  if self.state == 'stopped' then
    return
  end
  local was_ready = self.state == 'ready'
  self.conn = nil
  self.busy = 0
  self:wake()
  if was_ready then
    hooks.on_down(self)
  end
  self:retry()
end

function Client:retry()
  if self.state == 'stopped' then
    return
  end
  self.state = 'down'
  local delay = self.backoff
  self.backoff = math.min(self.backoff * 2, cfg.reconnect.max_ms)
  if not self.timer then
    self.timer = uv.new_timer()
  end
  self.timer:start(delay, 0, function()
    vim.schedule(function()
      if self.state == 'down' then
        self:connect()
      end
    end)
  end)
end

function Client:ready()
  return self.state == 'ready'
end

-- when_ready calls cb(true) once the client is connected, or cb(false)
-- if it is not within timeout_ms.
function Client:when_ready(timeout_ms, cb)
  if self:ready() then
    cb(true)
    return
  end
  local called = false
  local function once(ok)
    if not called then
      called = true
      cb(ok)
    end
  end
  table.insert(self.waiters, once)
  vim.defer_fn(function()
    once(false)
  end, timeout_ms)
end

-- abs returns the daemon's absolute path of a workspace key.
function Client:abs(key)
  if key == '' then
    return self.root
  end
  return (self.root == '/' and '' or self.root) .. '/' .. key
end

-- request sends a request; cb(err, result) runs in the main loop.
function Client:request(method, params, cb)
  if not self:ready() then
    vim.schedule(function()
      cb({ code = rpc.codes.disconnected, message = 'draftfs: not connected to the daemon at ' .. self.socket })
    end)
    return
  end
  self.conn:request(method, params, cb)
end

-- buffer_request is a request that changes a buffer; when_idle waits for
-- the answers of all of them, so a commit sees the text the user has.
function Client:buffer_request(method, params, cb)
  self.busy = self.busy + 1
  local conn = self.conn
  self:request(method, params, function(err, result)
    if conn == self.conn and self.busy > 0 then
      self.busy = self.busy - 1
      self:wake()
    end
    cb(err, result)
  end)
end

function Client:wake()
  if self.busy > 0 then
    return
  end
  local idle = self.idle
  self.idle = {}
  for _, cb in ipairs(idle) do
    cb()
  end
end

function Client:when_idle(cb)
  if self.busy == 0 then
    cb()
  else
    table.insert(self.idle, cb)
  end
end

-- inside returns path in the daemon's terms (its workspace root joined
-- with the path below it), or nil when path is not below the workspace
-- or is in the mounted merged view.
function Client:inside(path)
  local function below(root, p)
    if root == '/' then
      return p:sub(2)
    end
    if p:sub(1, #root + 1) == root .. '/' and #p > #root + 1 then
      return p:sub(#root + 2)
    end
  end
  if self.mount and (path == self.mount or below(self.mount, path)) then
    return nil
  end
  local rel = below(self.root, path) or below(self.real_root, path)
  if not rel then
    return nil
  end
  return self:abs(rel)
end

-- stop_all closes every connection for good (Neovim is exiting) and calls
-- cb once what was sent has left.
function M.stop_all(cb)
  local left = 1
  local function one()
    left = left - 1
    if left == 0 then
      cb()
    end
  end
  for _, c in pairs(clients) do
    if c.timer then
      c.timer:stop()
    end
    local conn = c.conn
    c.state = 'stopped'
    if conn then
      left = left + 1
      conn:flushed(function()
        conn:close('exiting')
        one()
      end)
    end
  end
  one()
end

return M
