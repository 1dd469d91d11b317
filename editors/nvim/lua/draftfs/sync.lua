-- Keeping the daemon's copy of each file buffer byte for byte equal to
-- what `:w` would write.
--
-- # Changes
--
-- Changes travel as line ranges from nvim_buf_attach's on_lines, not as
-- on_bytes byte ranges and not as full text on every change:
--
--   - The daemon counts lines the way Vim does for a plain file: it breaks
--     lines at "\n" and "\r\n" alike, so a line range means the same lines
--     on both sides whatever 'fileformat' is, and the text sent is the
--     new lines joined with the buffer's line ending. on_bytes offsets
--     count one byte per line end and know nothing of 'endofline', so
--     they would need the same mapping, per primitive edit.
--   - Changes are coalesced: each on_lines call only widens one window of
--     changed lines (old and new extent) and arms a timer; when it fires
--     (at most debounce_ms after the first unsent change, however fast
--     the typing) the window's current lines go out as one range. Typing
--     costs a few integer updates per keystroke and one message per
--     pause, each as large as the lines touched, not the file.
--   - Full text is the fallback where lines do not map one to one: lines
--     holding "\r" (the daemon would see a line break), 'fileformat' mac,
--     a byte order mark or another 'fileencoding', a change of those
--     options or of 'endofline', and Vim's empty-buffer state (one empty
--     line that writes nothing). Every incremental change carries the
--     length of the result, so any drift makes the daemon ask for the
--     full text (CodeResync) instead of corrupting it quietly.
--
-- # Lifecycle
--
-- A buffer is opened in the daemon with its full text once its daemon is
-- found and connected, and again after every reconnect or reload; when
-- it has no unsaved changes it is marked saved at once, so the merged view
-- shows the disk. :w sends the last changes and marks it saved; closing
-- or unloading it closes it in the daemon.

local api = vim.api
local uv = vim.loop
local client = require('draftfs.client')
local locate = require('draftfs.locate')
local text = require('draftfs.text')
local rpc = require('draftfs.rpc')

local M = {}

local cfg

-- tracked maps a buffer number to its state:
--   buf, file        buffer number, real absolute path of its file
--   client, path     its daemon, and the path in the daemon's terms
--   attach_id        the live nvim_buf_attach (older ones detach)
--   attached         whether that attachment is live
--   opened           the daemon holds this buffer
--   clean            the daemon has it marked saved
--   version          of the last message sent
--   n, fmt, cr, empty the line count and format last sent, whether a
--                    line held "\r", whether the text was empty
--   win              changed lines since: {a, b, c}: lines [a, b) of what
--                    was sent are now lines [a, c)
--   full             the next message sends the full text
--   bad              why the buffer cannot be sent, once reported
--   fulls, ranges, resyncs  counts of full texts and of ranges sent, and
--                    of the daemon's asking for the full text
local tracked = {}
-- homeless holds buffers whose daemon was not found (yet).
local homeless = {}
-- dirty holds buffers with changes to send when the timer fires.
local dirty = {}
local timer = uv.new_timer()
local armed = false
local rescan = uv.new_timer()
local rescanning = false

function M.configure(config)
  cfg = config
end

local function display(st)
  return vim.fn.fnamemodify(st.file, ':~:.')
end

local function schedule(st)
  dirty[st.buf] = true
  if armed then
    return
  end
  armed = true
  timer:start(cfg.debounce_ms, 0, function()
    vim.schedule(M.flush_all)
  end)
end

-- answer handles the daemon's answer to a buffer message of st.
local function answer(st)
  return function(err)
    if not err or err.code == rpc.codes.disconnected or tracked[st.buf] ~= st then
      return -- a reconnect sends everything again
    end
    local kind = type(err.data) == 'table' and err.data.kind or nil
    if err.code == rpc.codes.resync or kind == 'badRange' or kind == 'notOpen' then
      if kind == 'notOpen' then
        st.opened = false
      else
        st.resyncs = st.resyncs + 1
      end
      st.full = true
      schedule(st)
    elseif kind == 'outside' then
      M.untrack(st.buf)
    elseif st.failed ~= err.message then
      st.failed = err.message
      vim.notify(('draftfs: %s: %s'):format(display(st), err.message), vim.log.levels.ERROR)
    end
  end
end

local function send(st, method, params)
  st.client:buffer_request(method, params, answer(st))
end

-- unsyncable takes a buffer the daemon cannot hold out of it.
local function unsyncable(st, why)
  if st.opened then
    send(st, 'buffer/didClose', { path = st.path })
    st.opened = false
  end
  st.win, st.full = nil, true
  if st.bad ~= why then
    st.bad = why
    vim.notify(('draftfs: %s %s: agents see the file on disk'):format(display(st), why), vim.log.levels.WARN)
  end
end

local function send_full(st, fmt)
  local n = api.nvim_buf_line_count(st.buf)
  if api.nvim_buf_get_offset(st.buf, n) > cfg.max_bytes then
    unsyncable(st, ('is over %d bytes (max_bytes)'):format(cfg.max_bytes))
    return
  end
  local body, why, lines = text.build(st.buf, fmt)
  if not body then
    unsyncable(st, 'is ' .. why)
    return
  end
  st.bad = nil
  st.n, st.fmt, st.win, st.full = #lines, fmt, nil, false
  st.cr = fmt.simple and text.has_cr(lines)
  st.empty = body == '' and #lines == 1
  st.version = st.version + 1
  local method = st.opened and 'buffer/didChange' or 'buffer/didOpen'
  st.opened, st.clean = true, false
  st.fulls = st.fulls + 1
  send(st, method, { path = st.path, version = st.version, text = body })
end

-- send_window sends the window of changed lines as one range, or the full
-- text where a range cannot say it (see the top of the file).
local function send_window(st, fmt)
  local w = st.win
  local n = api.nvim_buf_line_count(st.buf)
  if
    st.cr
    or st.empty
    or not fmt.simple
    or not text.same(fmt, st.fmt)
    or n ~= st.n + (w.c - w.b)
    or (w.a == 0 and w.b == st.n)
    or (n == 1 and api.nvim_buf_get_lines(st.buf, 0, 1, true)[1] == '') -- maybe Vim's empty state
  then
    send_full(st, fmt)
    return
  end
  local range, lines, body
  if w.b < st.n then
    -- Whole lines, each with its ending: what follows is untouched.
    lines = api.nvim_buf_get_lines(st.buf, w.a, w.c, true)
    range = { start = { line = w.a, character = 0 }, ['end'] = { line = w.b, character = 0 } }
    body = #lines > 0 and table.concat(lines, fmt.nl) .. fmt.nl or ''
  else
    -- The change reaches the last line: start at the end of the line
    -- before, so the file ends with a line ending exactly when
    -- 'endofline' says so.
    lines = api.nvim_buf_get_lines(st.buf, w.a - 1, w.c, true)
    local prev = table.remove(lines, 1)
    range = { start = { line = w.a - 1, character = #prev }, ['end'] = { line = st.n, character = 0 } }
    body = (#lines > 0 and fmt.nl .. table.concat(lines, fmt.nl) or '') .. (fmt.eol and fmt.nl or '')
  end
  if text.has_cr(lines) or not text.valid_utf8(body) then
    send_full(st, fmt) -- remembers the "\r", or reports the bad bytes
    return
  end
  st.n, st.win = n, nil
  st.version = st.version + 1
  st.clean = false
  st.ranges = st.ranges + 1
  send(st, 'buffer/didChange', {
    path = st.path,
    version = st.version,
    changes = { { range = range, text = body } },
    length = text.length(st.buf, n, fmt),
  })
end

-- flush sends what changed in st, then marks the daemon's copy saved when
-- the buffer has no unsaved changes (after :w, or undo back to them).
local function flush(st)
  dirty[st.buf] = nil
  local c = st.client
  if not (c and c:ready() and st.path) or not api.nvim_buf_is_loaded(st.buf) then
    return -- connecting: opening sends the full text
  end
  if st.full or not st.opened or st.bad then
    send_full(st, text.format(st.buf))
  elseif st.win then
    send_window(st, text.format(st.buf))
  elseif st.fmt and not text.same(text.format(st.buf), st.fmt) then
    send_full(st, text.format(st.buf)) -- an option changed, no line did
  end
  if st.opened and not st.clean and not vim.bo[st.buf].modified then
    st.clean = true
    send(st, 'buffer/didSave', { path = st.path })
  end
end

function M.flush_all()
  armed = false
  timer:stop()
  local bufs = dirty
  dirty = {}
  for buf in pairs(bufs) do
    local st = tracked[buf]
    if st then
      flush(st)
    end
  end
end

-- on_lines widens st's window of changed lines by one change: lines
-- [f, l) became [f, nl). It runs on every change, so it only counts.
local function on_lines(st, f, l, nl)
  local w = st.win
  if st.full then
    -- the full text goes anyway
  elseif not w then
    st.win = { a = f, b = l, c = nl }
  else
    -- w's lines now are [w.a, w.c). Lines outside it are as sent, so
    -- widening it to [a, c) covers sent lines [a, w.b + (c - w.c)).
    local a = math.min(w.a, f)
    local c = math.max(w.c, l)
    st.win = { a = a, b = w.b + (c - w.c), c = c + (nl - l) }
  end
  schedule(st)
end

local function attach(st)
  st.attach_id = (st.attach_id or 0) + 1
  local id = st.attach_id
  st.attached = api.nvim_buf_attach(st.buf, false, {
    on_lines = function(_, buf, _, f, l, nl)
      if tracked[buf] ~= st or st.attach_id ~= id then
        return true -- detach: untracked, or attached again since
      end
      on_lines(st, f, l, nl)
    end,
    on_reload = function()
      if tracked[st.buf] == st and st.attach_id == id then
        st.full = true
        schedule(st)
      end
    end,
    on_detach = function()
      if st.attach_id == id then
        st.attached = false
      end
    end,
  })
end

-- bind gives st its path in its daemon's terms and opens it there.
local function bind(st)
  st.path = st.client:inside(st.file)
  if not st.path then
    st.client = nil -- in the mounted view, or the daemon is for elsewhere
    return
  end
  st.opened, st.full = false, true
  flush(st)
end

local function arm_rescan()
  if rescanning then
    return
  end
  rescanning = true
  rescan:start(cfg.rescan_ms, cfg.rescan_ms, function()
    vim.schedule(function()
      if next(homeless) == nil then
        rescan:stop()
        rescanning = false
        return
      end
      for buf in pairs(homeless) do
        local st = tracked[buf]
        homeless[buf] = nil
        if st then
          M.locate(st)
        end
      end
    end)
  end)
end

function M.locate(st)
  locate.find(cfg, st.file, function(socket)
    if tracked[st.buf] ~= st then
      return
    end
    if not socket then
      homeless[st.buf] = true
      arm_rescan()
      return
    end
    st.client = client.get(socket)
    if st.client:ready() then
      bind(st)
    end -- else on_ready binds it
  end)
end

-- file_of returns the real path of buf's file, or nil when buf is not a
-- loaded buffer of a file.
local function file_of(buf)
  if not api.nvim_buf_is_loaded(buf) or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  if name == '' or name:match('^%a[%w+.-]*://') or vim.fn.isdirectory(name) == 1 then
    return nil
  end
  return locate.realdir(name) .. '/' .. vim.fn.fnamemodify(name, ':t')
end

-- track starts syncing buf, or, for a buffer synced already, sends its
-- text again (it was read again: :e!, a reload after a commit).
function M.track(buf)
  local file = file_of(buf)
  local st = tracked[buf]
  if st and st.file ~= file then
    M.untrack(buf) -- renamed (:saveas, :file) or no longer a file
    st = nil
  end
  if not file then
    return
  end
  if st then
    if not st.attached then
      attach(st)
    end
    st.full = true
    schedule(st)
    return
  end
  st = { buf = buf, file = file, version = 0, fulls = 0, ranges = 0, resyncs = 0 }
  tracked[buf] = st
  attach(st)
  M.locate(st)
end

-- untrack stops syncing buf and closes it in the daemon.
function M.untrack(buf)
  local st = tracked[buf]
  if not st then
    return
  end
  tracked[buf], homeless[buf], dirty[buf] = nil, nil, nil
  if st.opened and st.client and st.client:ready() then
    send(st, 'buffer/didClose', { path = st.path })
  end
end

-- saved handles BufWritePost of buf to file (the written file's name).
function M.saved(buf, file)
  local st = tracked[buf]
  if not st then
    return
  end
  local real = locate.realdir(file) .. '/' .. vim.fn.fnamemodify(file, ':t')
  if real == st.file then
    flush(st)
  end
end

function M.on_ready(c)
  for _, st in pairs(tracked) do
    if st.client == c then
      bind(st)
    end
  end
end

function M.on_down(c)
  for _, st in pairs(tracked) do
    if st.client == c then
      st.opened, st.win = false, nil
    end
  end
end

-- at returns the buffers whose file is path (in a daemon's terms).
function M.at(path)
  local bufs = {}
  for buf, st in pairs(tracked) do
    if st.path == path then
      bufs[#bufs + 1] = buf
    end
  end
  return bufs
end

-- touch makes buf's next flush check its options ('fileformat', ...).
function M.touch(buf)
  local st = tracked[buf]
  if st then
    schedule(st)
  end
end

-- resync sends the full text of the buffers of path (the daemon asked).
function M.resync(path)
  for _, buf in ipairs(M.at(path)) do
    local st = tracked[buf]
    st.full = true
    schedule(st)
  end
end

-- state describes buf's sync (for :checkhealth-like reports and tests).
function M.state(buf)
  local st = tracked[buf]
  if not st then
    return nil
  end
  return {
    file = st.file,
    path = st.path,
    socket = st.client and st.client.socket,
    connected = st.client ~= nil and st.client:ready(),
    opened = st.opened == true,
    version = st.version,
    pending = dirty[buf] == true,
    fulls = st.fulls,
    ranges = st.ranges,
    resyncs = st.resyncs,
    problem = st.bad,
  }
end

-- client_of returns the client of buf, if it is synced.
function M.client_of(buf)
  local st = tracked[buf]
  return st and st.client
end

-- close_all closes every buffer in its daemon (Neovim is exiting).
function M.close_all()
  for buf in pairs(tracked) do
    M.untrack(buf)
  end
end

return M
