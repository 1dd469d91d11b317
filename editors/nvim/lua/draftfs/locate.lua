-- Finding the control socket of the workspace a file belongs to: the
-- nearest ancestor directory with a running daemon. `draftfs socket
-- --workspace DIR` names the socket a daemon for DIR would listen on (it
-- depends on the state directory, so only draftfs knows it); a daemon
-- runs there when the socket exists. Socket paths are asked once per
-- directory and cached, so looking again later (for files opened before
-- their daemon started) costs one stat per ancestor and no process.

local uv = vim.loop

local M = {}

-- cache maps a directory to its socket path, or false when draftfs could
-- not tell (the error is reported once).
local cache = {}
-- waiting maps a directory to the callbacks of an asking in flight.
local waiting = {}
-- reported: a failing draftfs was reported already.
local reported = false

local function report(msg)
  vim.notify('draftfs: ' .. msg, vim.log.levels.ERROR)
end

-- argv is the draftfs command line of cfg with args appended.
function M.argv(cfg, args)
  local argv = type(cfg.cmd) == 'table' and vim.deepcopy(cfg.cmd) or { cfg.cmd }
  vim.list_extend(argv, args)
  if cfg.state then
    vim.list_extend(argv, { '--state', cfg.state })
  end
  return argv
end

-- run starts argv and calls cb(code, stdout, stderr) in the main loop.
function M.run(argv, cb)
  local out, errp = uv.new_pipe(false), uv.new_pipe(false)
  local chunks, echunks = {}, {}
  local handle, pid_or_err
  local pending = 3 -- exit, stdout EOF, stderr EOF
  local code
  local function done()
    pending = pending - 1
    if pending == 0 then
      vim.schedule(function()
        cb(code, table.concat(chunks), table.concat(echunks))
      end)
    end
  end
  handle, pid_or_err = uv.spawn(argv[1], {
    args = vim.list_slice(argv, 2),
    stdio = { nil, out, errp },
  }, function(c)
    code = c
    handle:close()
    done()
  end)
  if not handle then
    out:close()
    errp:close()
    vim.schedule(function()
      cb(-1, '', tostring(pid_or_err))
    end)
    return
  end
  local function reader(pipe, into)
    pipe:read_start(function(err, data)
      if data then
        into[#into + 1] = data
        return
      end
      pipe:close()
      if err then
        into[#into + 1] = err
      end
      done()
    end)
  end
  reader(out, chunks)
  reader(errp, echunks)
end

-- socket_of calls cb(path or nil) with the socket of a daemon for dir.
local function socket_of(cfg, dir, cb)
  local known = cache[dir]
  if known ~= nil then
    cb(known or nil)
    return
  end
  if waiting[dir] then
    table.insert(waiting[dir], cb)
    return
  end
  waiting[dir] = { cb }
  M.run(M.argv(cfg, { 'socket', '--workspace', dir }), function(code, out, err)
    local path = vim.trim(out)
    if code ~= 0 or path == '' then
      if not reported then
        reported = true
        report(('`%s` failed: %s'):format(table.concat(M.argv(cfg, { 'socket', '--workspace', dir }), ' '), vim.trim(err)))
      end
      path = false
    end
    cache[dir] = path
    local cbs = waiting[dir]
    waiting[dir] = nil
    for _, f in ipairs(cbs) do
      f(path or nil)
    end
  end)
end

-- live reports whether a socket file exists at path.
local function live(path)
  local st = uv.fs_stat(path)
  return st ~= nil and st.type == 'socket'
end

-- ancestors lists dir and its parents, nearest first.
local function ancestors(dir)
  local dirs = {}
  while true do
    dirs[#dirs + 1] = dir
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      return dirs
    end
    dir = parent
  end
end

-- realdir returns the real path of the directory holding file, following
-- symlinks as far as the directories exist.
function M.realdir(file)
  local dir = vim.fn.fnamemodify(file, ':h')
  local rest = {}
  while true do
    local real = uv.fs_realpath(dir)
    if real then
      for i = #rest, 1, -1 do
        real = real .. '/' .. rest[i]
      end
      return real
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      return vim.fn.fnamemodify(file, ':h')
    end
    rest[#rest + 1] = vim.fn.fnamemodify(dir, ':t')
    dir = parent
  end
end

-- find calls cb(socket or nil) with the control socket for file: the one
-- configured, or that of the nearest ancestor whose daemon is running.
function M.find(cfg, file, cb)
  if cfg.socket then
    cb(cfg.socket)
    return
  end
  if cfg.workspace then
    local root = vim.fn.fnamemodify(cfg.workspace, ':p')
    if #root > 1 then
      root = root:gsub('/$', '')
    end
    socket_of(cfg, root, cb)
    return
  end
  -- A new file's directories may not exist yet: no daemon serves them.
  local dirs = vim.tbl_filter(function(dir)
    return vim.fn.isdirectory(dir) == 1
  end, ancestors(M.realdir(file)))
  local paths, left = {}, #dirs
  for i, dir in ipairs(dirs) do
    socket_of(cfg, dir, function(path)
      paths[i] = path or false
      left = left - 1
      if left > 0 then
        return
      end
      for j = 1, #dirs do
        if paths[j] and live(paths[j]) then
          cb(paths[j])
          return
        end
      end
      cb(nil)
    end)
  end
end

return M
