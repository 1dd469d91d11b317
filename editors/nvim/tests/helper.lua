-- Test harness for the headless Neovim tests: run by nvim_test.go, one
-- Neovim per test file, as
--
--   nvim --headless -u NONE --cmd 'set rtp+=editors/nvim' -c 'luafile FILE'
--
-- with DRAFTFS_BIN (the draftfs binary), DRAFTFS_TEST_TMP (a fresh
-- directory) and DRAFTFS_TEST_MOUNT=1 when FUSE mounts work. Each file
-- registers T.setup (start daemons with `draftfs serve`, set up the
-- plugin) and cases with T.case and ends with T.run(), which exits 0 when
-- every case passed and 1 (cquit) otherwise.
--
-- Cases run in a coroutine that yields to Neovim's main loop whenever it
-- waits (T.wait, T.sleep), so keys given to nvim_input are typed by
-- Neovim itself, in insert mode, while timers and socket callbacks run as
-- they do for a user.

local rpc = require('draftfs.rpc')

local T = {}

T.bin = assert(os.getenv('DRAFTFS_BIN'), 'DRAFTFS_BIN is not set')
T.tmp = assert(os.getenv('DRAFTFS_TEST_TMP'), 'DRAFTFS_TEST_TMP is not set')
T.can_mount = os.getenv('DRAFTFS_TEST_MOUNT') == '1'
T.state = T.tmp .. '/state'
-- plugin is the plugin's directory (this file is in its tests/).
T.plugin = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
-- only, when set, names the one case to run.
local only = os.getenv('DRAFTFS_TEST_ONLY')

vim.o.showmode = false

local cases = {}
local daemons = {}

function T.log(fmt, ...)
  io.stderr:write(fmt:format(...) .. '\n')
end

local setup = function() end

-- setup registers what runs before the cases.
function T.setup(fn)
  setup = fn
end

function T.case(name, fn)
  cases[#cases + 1] = { name = name, fn = fn }
end

-- fail ends the current case.
function T.fail(fmt, ...)
  error({ failure = fmt:format(...) }, 0)
end

local function show(v)
  if type(v) == 'string' then
    return ('%q'):format(v)
  end
  return vim.inspect(v)
end

function T.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    T.fail('%s:\n  want %s\n   got %s', what or 'values differ', show(want), show(got))
  end
end

function T.ok(cond, fmt, ...)
  if not cond then
    T.fail(fmt, ...)
  end
end

-- now returns a monotonic time in milliseconds.
function T.now()
  return vim.loop.hrtime() / 1e6
end

-- sleep gives the main loop ms milliseconds (typed keys, timers,
-- callbacks all run meanwhile).
function T.sleep(ms)
  local co = coroutine.running()
  vim.defer_fn(function()
    local ok, err = coroutine.resume(co)
    if not ok then
      T.log('the test coroutine died: %s', tostring(err))
      vim.cmd('cquit 1')
    end
  end, ms)
  coroutine.yield()
end

-- wait polls cond until it returns a truthy value, failing after
-- timeout_ms; it returns that value.
function T.wait(what, cond, timeout_ms)
  local deadline = T.now() + (timeout_ms or 5000)
  while true do
    local v = cond()
    if v then
      return v
    end
    if T.now() > deadline then
      T.fail('timed out waiting for %s', what)
    end
    T.sleep(2)
  end
end

-- undo_break makes the next change an undo step of its own, as a typed
-- command's is. Neovim closes an undo step when its main loop turns to
-- wait for input; changes made by callbacks that run without such a turn
-- between them (events handled in one batch, or inside another
-- callback's wait) are one step, so under load an edit made after
-- :edit! was undone together with the reload.
function T.undo_break()
  vim.cmd('let &undolevels = &undolevels')
end

function T.mkdir(dir)
  vim.fn.mkdir(dir, 'p')
  return dir
end

function T.write_file(path, data)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local f = assert(io.open(path, 'wb'))
  f:write(data)
  f:close()
end

-- read_file returns path's bytes, or nil when it does not exist.
function T.read_file(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local data = f:read('*a')
  f:close()
  return data
end

-- written returns the bytes `:w` writes for buf, without writing its file.
local written_n = 0
function T.written(buf)
  written_n = written_n + 1
  local out = ('%s/written-%d'):format(T.tmp, written_n)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('noautocmd silent keepalt write! ' .. vim.fn.fnameescape(out))
  end)
  local data = T.read_file(out)
  os.remove(out)
  return data
end

-- run_cmd runs argv to completion and returns its exit code and output.
function T.run_cmd(argv, input)
  local out = vim.fn.system(argv, input)
  return vim.v.shell_error, out
end

-- daemon starts `draftfs serve` for workspace (and mounts the merged view
-- at opts.mount) and waits for its ready line.
function T.daemon(workspace, opts)
  opts = opts or {}
  local d = { workspace = workspace, mount = opts.mount, out = {}, err = {} }
  local argv = { T.bin, 'serve', '--workspace', workspace, '--state', T.state }
  if opts.mount then
    T.mkdir(opts.mount)
    vim.list_extend(argv, { '--mount', opts.mount })
  end
  d.job = vim.fn.jobstart(argv, {
    on_stdout = function(_, data)
      vim.list_extend(d.out, data)
    end,
    on_stderr = function(_, data)
      vim.list_extend(d.err, data)
    end,
    on_exit = function(_, code)
      d.exited = code
    end,
  })
  T.ok(d.job > 0, 'cannot start %s', table.concat(argv, ' '))
  T.wait('the ready line of ' .. table.concat(argv, ' '), function()
    if d.exited then
      T.fail('draftfs serve exited with %d: %s', d.exited, table.concat(d.err, '\n'))
    end
    return #d.out > 1 or (#d.out == 1 and d.out[1] ~= '')
  end, 15000)
  local code, out = T.run_cmd({ T.bin, 'socket', '--workspace', workspace, '--state', T.state })
  T.eq(0, code, 'draftfs socket exit status: ' .. out)
  d.socket = vim.trim(out)
  daemons[d] = true
  return d
end

-- stop stops a daemon with SIGTERM and waits for it to exit.
function T.stop(d)
  if not d.exited then
    vim.fn.jobstop(d.job)
    T.wait('draftfs serve to exit', function()
      return d.exited ~= nil
    end, 10000)
  end
  daemons[d] = nil
end

-- probe is a connection of the test's own to a daemon, to see what the
-- daemon holds; probe:call(method, params) waits for the answer.
function T.probe(d)
  local p = { notes = {} }
  local conn
  rpc.connect(d.socket, {
    on_notify = function(method, params)
      table.insert(p.notes, { method = method, params = params })
    end,
    on_close = function() end,
  }, function(err, c)
    conn = c
    p.err = err
  end)
  T.wait('the probe to connect', function()
    return conn or p.err
  end)
  T.ok(conn, 'probe: cannot connect to %s: %s', d.socket, tostring(p.err))
  function p.call(_, method, params)
    local done, rerr, res = false
    conn:request(method, params, function(e, r)
      done, rerr, res = true, e, r
    end)
    T.wait('the answer to ' .. method, function()
      return done
    end)
    return res, rerr
  end
  function p.close()
    conn:close('test done')
  end
  p:call('initialize', { clientInfo = { name = 'draftfs.nvim tests' }, positionEncodings = { 'utf-8' } })
  return p
end

-- text returns what the daemon's merged view holds at path (nil if none).
function T.text(probe, path)
  local res, err = probe:call('draft/read', { path = path })
  if err then
    return nil, err
  end
  if res.binary then
    return nil, 'not UTF-8'
  end
  return res.text or '' -- empty text is left out
end

-- buffer returns the daemon's entry of its buffer list for path.
function T.buffer(probe, path, workspace)
  local rel = path:sub(#workspace + 2)
  local list = probe:call('buffer/list')
  for _, b in ipairs(list or {}) do
    if b.path == rel then
      return b
    end
  end
  return nil
end

local b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

-- base64 encodes s (fs/writeFile takes bytes as base64).
function T.base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local k = {}
    for j = 3, 0, -1 do
      local v = math.floor(n / 64 ^ j) % 64
      k[#k + 1] = b64:sub(v + 1, v + 1)
    end
    if not b then
      k[3], k[4] = '=', '='
    elseif not c then
      k[4] = '='
    end
    out[#out + 1] = table.concat(k)
  end
  return table.concat(out)
end

-- agent_write writes data at path the way an agent's tool does: into
-- the draft, through the daemon.
function T.agent_write(probe, path, data)
  local _, err = probe:call('fs/writeFile', { source = 'mcp', path = path, data = T.base64(data) })
  T.ok(not err, 'fs/writeFile %s: %s', path, vim.inspect(err))
end

-- notes captures vim.notify messages.
T.notes = {}
vim.notify = function(msg, level)
  table.insert(T.notes, { msg = msg, level = level })
  T.log('notify[%s]: %s', tostring(level), msg)
end

-- noted waits for a notification matching pattern and returns it.
function T.noted(pattern, timeout_ms)
  return T.wait('a notification matching ' .. pattern, function()
    for _, n in ipairs(T.notes) do
      if n.msg:find(pattern) then
        return n.msg
      end
    end
  end, timeout_ms)
end

-- clean wipes every buffer but one empty one, between cases.
local function clean()
  vim.cmd('silent! only!')
  vim.cmd('enew!')
  local cur = vim.api.nvim_get_current_buf()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if b ~= cur then
      vim.cmd('silent! bwipeout! ' .. b)
    end
  end
  T.notes = {}
end

local function catch(e)
  if type(e) == 'table' and e.failure then
    return e.failure
  end
  return debug.traceback(tostring(e), 2)
end

local function main()
  local failed = 0
  local ok, err = xpcall(setup, catch)
  if not ok then
    T.log('--- FAIL: setup\n%s', err)
    cases, failed = {}, 1
  end
  for _, c in ipairs(cases) do
    if not only or only == c.name then
      local start = T.now()
      ok, err = xpcall(c.fn, catch)
      if ok then
        T.log('--- PASS: %s (%.0f ms)', c.name, T.now() - start)
      else
        failed = failed + 1
        T.log('--- FAIL: %s\n%s', c.name, err)
      end
      clean()
    end
  end
  for d in pairs(daemons) do
    pcall(T.stop, d)
  end
  if failed > 0 then
    T.log('%d case(s) failed', failed)
    vim.cmd('cquit 1')
  end
  vim.cmd('qall!')
end

-- run runs setup and the cases, then exits Neovim.
function T.run()
  local co = coroutine.create(main)
  vim.schedule(function()
    local ok, err = coroutine.resume(co)
    if not ok then
      T.log('the test coroutine died: %s', tostring(err))
      vim.cmd('cquit 1')
    end
  end)
end

return T
