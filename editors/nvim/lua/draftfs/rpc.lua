-- JSON-RPC 2.0 over a Unix socket, one message per line: the wire of the
-- draftfs control socket.
--
-- Everything libuv calls back runs in Neovim's fast context, where most of
-- the editor API is off limits: the read callback only splits lines and
-- decodes JSON (vim.json works anywhere), and every callback into the rest
-- of the plugin goes through vim.schedule. Writes are queued by libuv and
-- never wait for the daemon, so sending never blocks typing.

local uv = vim.loop

local M = {}

local Conn = {}
Conn.__index = Conn

-- Error codes of the control socket (protocol/control/errors.go).
M.codes = {
  method_not_found = -32601,
  not_found = -32002,
  resync = -32003,
  disconnected = -32099, -- made up here: the connection closed first
}

-- foreign says why the socket at path may not be this user's daemon's
-- (nil when nothing is wrong): its directory must be the user's own and
-- writable by no one else, the socket the user's. Otherwise another user
-- could listen there and read unsaved text (as /tmp/draftfs-UID made
-- first by someone else would let them).
local function foreign(path, me)
  local dir = path:match('^(.*)/[^/]*$') or '.'
  local st = uv.fs_lstat(dir)
  if not st then
    return nil -- connecting fails as it would anyway
  end
  local writable = math.floor(st.mode / 16) % 2 == 1 or math.floor(st.mode / 2) % 2 == 1
  if st.type ~= 'directory' then
    return string.format('socket directory %s is not a directory (%s): remove it and start draftfs again', dir, st.type)
  elseif st.uid ~= me then
    return string.format('socket directory %s belongs to uid %d, not to you (uid %d), so another user may listen there; nothing was sent: remove it and start draftfs again', dir, st.uid, me)
  elseif writable then
    return string.format('socket directory %s can be written by other users (mode %o), so the socket may not be the daemon\'s; nothing was sent: chmod 700 %s and start draftfs again', dir, st.mode % 512, dir)
  end
  local sst = uv.fs_lstat(path)
  if sst and sst.uid ~= me then
    return string.format('socket %s belongs to uid %d, not to you (uid %d); nothing was sent: remove it and start draftfs again', path, sst.uid, me)
  end
  return nil
end

local cdef_done = false

-- peer returns the uid and pid of the process that accepted the
-- connection on pipe (SO_PEERCRED), nil where LuaJIT's FFI is missing.
local function peer(pipe)
  local ok, ffi = pcall(require, 'ffi')
  if not ok then
    return nil
  end
  if not cdef_done then
    pcall(ffi.cdef, [[
      struct draftfs_ucred { int pid; unsigned int uid; unsigned int gid; };
      int getsockopt(int sockfd, int level, int optname, void *optval, unsigned int *optlen);
    ]])
    cdef_done = true
  end
  local cred = ffi.new('struct draftfs_ucred[1]')
  local len = ffi.new('unsigned int[1]', ffi.sizeof('struct draftfs_ucred'))
  local SOL_SOCKET, SO_PEERCRED = 1, 17
  if ffi.C.getsockopt(pipe:fileno(), SOL_SOCKET, SO_PEERCRED, cred, len) ~= 0 then
    return nil
  end
  return tonumber(cred[0].uid), tonumber(cred[0].pid)
end

-- connect opens the socket at path, once it is sure the user's own
-- process listens there (see foreign and peer); otherwise cb gets an
-- error that starts with "draftfs: " and nothing is sent.
-- handlers.on_notify(method, params) and handlers.on_close(reason) run
-- in the main loop; cb(err, conn) too.
function M.connect(path, handlers, cb)
  local me = uv.os_get_passwd().uid
  local why = foreign(path, me)
  if why then
    vim.schedule(function()
      cb('draftfs: ' .. why)
    end)
    return
  end
  local pipe = uv.new_pipe(false)
  pipe:connect(path, function(err)
    if not err then
      local uid, pid = peer(pipe)
      if uid and uid ~= me then
        err = string.format('draftfs: the process listening on %s (pid %d) runs as uid %d, not as you (uid %d); nothing was sent to it: stop it, remove the socket and start draftfs again', path, pid, uid, me)
      end
    end
    if err then
      pipe:close()
      vim.schedule(function()
        cb(err)
      end)
      return
    end
    local conn = setmetatable({
      pipe = pipe,
      handlers = handlers,
      next_id = 1,
      pending = {}, -- id -> callback
      partial = {}, -- chunks of a line not complete yet
      closed = false,
    }, Conn)
    pipe:read_start(function(rerr, data)
      conn:on_read(rerr, data)
    end)
    vim.schedule(function()
      cb(nil, conn)
    end)
  end)
end

-- on_read runs in fast context.
function Conn:on_read(err, data)
  if err or not data then
    self:close(err or 'the daemon closed the connection')
    return
  end
  local start = 1
  while true do
    local nl = data:find('\n', start, true)
    if not nl then
      if start <= #data then
        self.partial[#self.partial + 1] = data:sub(start)
      end
      return
    end
    self.partial[#self.partial + 1] = data:sub(start, nl - 1)
    local line = table.concat(self.partial)
    self.partial = {}
    start = nl + 1
    if line:find('%S') then
      self:on_message(line)
    end
  end
end

-- on_message runs in fast context.
function Conn:on_message(line)
  local ok, msg = pcall(vim.json.decode, line)
  if not ok or type(msg) ~= 'table' then
    return -- the daemon never sends such lines; nothing can answer them
  end
  if msg.method ~= nil then
    if msg.id ~= nil and msg.id ~= vim.NIL then
      -- The daemon sends no requests; answer as JSON-RPC wants.
      self:send({
        jsonrpc = '2.0',
        id = msg.id,
        error = { code = M.codes.method_not_found, message = 'draftfs.nvim handles no requests' },
      })
      return
    end
    local params = msg.params
    if params == vim.NIL then
      params = nil
    end
    vim.schedule(function()
      if not self.closed then
        self.handlers.on_notify(msg.method, params)
      end
    end)
    return
  end
  local cb = self.pending[msg.id]
  if not cb then
    return
  end
  self.pending[msg.id] = nil
  local rerr, result = msg.error, msg.result
  if rerr == vim.NIL then
    rerr = nil
  end
  if result == vim.NIL then
    result = nil
  end
  vim.schedule(function()
    cb(rerr, result)
  end)
end

-- object makes params encode as a JSON object even when empty (an empty
-- Lua table encodes as an array).
local function object(params)
  if params == nil or next(params) == nil then
    return vim.empty_dict()
  end
  return params
end

function Conn:send(msg)
  if self.closed then
    return false
  end
  self.pipe:write(vim.json.encode(msg) .. '\n')
  return true
end

-- request sends method and calls cb(err, result) in the main loop when
-- the answer comes, or with a disconnected error if the connection closes
-- first. err is the JSON-RPC error object {code, message, data?}.
function Conn:request(method, params, cb)
  local id = self.next_id
  self.next_id = id + 1
  if self.closed then
    vim.schedule(function()
      cb({ code = M.codes.disconnected, message = 'not connected to the draftfs daemon' })
    end)
    return
  end
  self.pending[id] = cb
  self:send({ jsonrpc = '2.0', id = id, method = method, params = object(params) })
end

function Conn:notify(method, params)
  self:send({ jsonrpc = '2.0', method = method, params = object(params) })
end

-- flushed calls cb once libuv has handed every queued write to the kernel
-- (used before Neovim exits).
function Conn:flushed(cb)
  if self.closed then
    cb()
    return
  end
  self.pipe:write('', function()
    vim.schedule(cb)
  end)
end

-- close may run in fast context; pending requests fail.
function Conn:close(reason)
  if self.closed then
    return
  end
  self.closed = true
  pcall(self.pipe.read_stop, self.pipe)
  if not self.pipe:is_closing() then
    self.pipe:close()
  end
  local pending = self.pending
  self.pending = {}
  vim.schedule(function()
    for _, cb in pairs(pending) do
      cb({ code = M.codes.disconnected, message = 'the connection to the draftfs daemon closed' })
    end
    self.handlers.on_close(reason)
  end)
end

return M
