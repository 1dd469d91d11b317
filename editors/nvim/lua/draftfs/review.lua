-- Reviewing the agent's draft from the editor: telling the user when the
-- draft changes a file they have open, and the :Draft* commands.
--
-- Everything here answers the daemon asynchronously: a command sends its
-- request and returns, the answer is shown when it comes.

local api = vim.api
local client = require('draftfs.client')
local locate = require('draftfs.locate')
local sync = require('draftfs.sync')
local rpc = require('draftfs.rpc')

local M = {}

local cfg

-- told holds the paths the user was told about and has not reviewed
-- since; queued the ones to tell about in the next notification.
local told = {}
local queued = {}
local queue_timer = vim.loop.new_timer()
local queue_armed = false

function M.configure(config)
  cfg = config
end

local function info(msg)
  vim.notify('draftfs: ' .. msg, vim.log.levels.INFO)
end

local function warn(msg)
  vim.notify('draftfs: ' .. msg, vim.log.levels.WARN)
end

local function err_msg(err)
  return type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
end

local function short(path)
  return vim.fn.fnamemodify(path, ':~:.')
end

-- Notifications from the daemon --------------------------------------------

local function tell()
  queue_armed = false
  local lines = {}
  for path, change in pairs(queued) do
    told[path] = true
    lines[#lines + 1] = ('%s (%s)'):format(short(path), change)
  end
  queued = {}
  if #lines == 0 or not cfg.notify then
    return
  end
  table.sort(lines)
  vim.notify(
    'draftfs: the draft changed ' .. table.concat(lines, ', ') .. ': :DraftDiff compares, :DraftCommit applies',
    vim.log.levels.WARN
  )
end

-- changed marks the open buffers of path changed in the draft and queues
-- a notification; notifications of one burst of agent writes go as one.
local function changed(path, change)
  local bufs = sync.at(path)
  if #bufs == 0 then
    return
  end
  for _, buf in ipairs(bufs) do
    vim.b[buf].draftfs_change = change
  end
  if told[path] then
    return
  end
  queued[path] = change
  if not queue_armed then
    queue_armed = true
    queue_timer:start(cfg.notify_delay_ms, 0, vim.schedule_wrap(tell))
  end
end

-- reviewed forgets what the user was told about path.
local function reviewed(path)
  told[path], queued[path] = nil, nil
  for _, buf in ipairs(sync.at(path)) do
    vim.b[buf].draftfs_change = nil
  end
end

-- reload reads the open buffers of path again from disk, which a commit
-- or undo changed. Buffers with unsaved changes are left alone: the user
-- is told, and Vim's own check of the file's time warns again on :w.
local function reload(path)
  for _, buf in ipairs(sync.at(path)) do
    if vim.bo[buf].modified then
      warn(('%s changed on disk; your unsaved changes are kept (:e! loads the file)'):format(short(path)))
    elseif vim.loop.fs_stat(api.nvim_buf_get_name(buf)) then
      api.nvim_buf_call(buf, function()
        vim.cmd('silent edit')
      end)
    else
      warn(('%s was deleted on disk'):format(short(path)))
    end
  end
end

-- status_changed handles a lost notification: every open file may have
-- changed, so ask which did.
local function status_changed(c)
  c:request('draft/status', nil, function(err, entries)
    if err or type(entries) ~= 'table' then
      return
    end
    for _, e in ipairs(entries) do
      changed(c:abs(e.path), e.change)
    end
  end)
end

-- kinds of draft/didChange that change the draft, not what is below it,
-- as told for the file at the change's path. A rename onto an open
-- file replaced its content: `sed -i` and most editors save by writing
-- a temporary file and renaming it over, so to the user it is modified.
local draft_kinds = {
  write = 'modified',
  create = 'added',
  remove = 'deleted',
  rename = 'modified',
  attr = 'attributes',
}

function M.on_notify(c, method, p)
  if type(p) ~= 'table' then
    return
  end
  local mine = p.draft == c.info.draft
  if method == 'draft/didChange' then
    if p.overflow then
      status_changed(c)
    elseif mine and draft_kinds[p.change] then
      changed(p.path, draft_kinds[p.change])
      if p.from then
        changed(p.from, 'renamed away')
      end
    elseif mine and p.change == 'undo' then
      reload(p.path)
      changed(p.path, 'restored by undo')
    end
  elseif method == 'draft/didCommit' and mine then
    for _, path in ipairs(p.paths or {}) do
      reviewed(path)
      reload(path)
    end
  elseif method == 'draft/didDiscard' and mine then
    for _, path in ipairs(p.paths or {}) do
      reviewed(path)
    end
  elseif method == 'buffer/resync' then
    sync.resync(p.path)
  end
end

-- Commands -------------------------------------------------------------

-- with_client calls fn(client) with the daemon of the current buffer, or
-- of the current directory, or the only one connected.
local function with_client(fn)
  local c = sync.client_of(api.nvim_get_current_buf())
  if c and c:ready() then
    fn(c)
    return
  end
  local probe = vim.fn.getcwd() .. '/.'
  locate.find(cfg, probe, function(socket)
    if not socket then
      local ready = vim.tbl_filter(function(cl)
        return cl:ready()
      end, client.all())
      if #ready == 1 then
        fn(ready[1])
        return
      end
      warn('no draftfs daemon runs for ' .. short(vim.fn.getcwd()) .. ': start one with `draftfs serve`')
      return
    end
    local cl = client.get(socket)
    cl:when_ready(cfg.connect_timeout_ms, function(ok)
      if ok then
        fn(cl)
      else
        warn('cannot connect to the draftfs daemon at ' .. socket)
      end
    end)
  end)
end

-- paths_of turns command arguments into absolute paths (relative ones are
-- relative to the current directory, as the user typed them).
local function paths_of(c, args)
  local paths = {}
  for _, a in ipairs(args) do
    local p = vim.fn.fnamemodify(vim.fn.expand(a), ':p'):gsub('/$', '')
    local real = locate.realdir(p) .. '/' .. vim.fn.fnamemodify(p, ':t')
    paths[#paths + 1] = c:inside(real) or p
  end
  return paths
end

-- current_path returns the daemon's path of the current buffer's file.
local function current_path(c)
  local st = sync.state(api.nvim_get_current_buf())
  if st and st.path then
    return st.path
  end
  local name = api.nvim_buf_get_name(0)
  if name == '' then
    return nil
  end
  return c:inside(paths_of(c, { name })[1])
end

-- before_review sends every unsent buffer change and waits for the
-- daemon to take them, so it compares and commits what the user sees.
local function before_review(c, fn)
  sync.flush_all()
  c:when_idle(fn)
end

-- :DraftStatus
function M.status()
  with_client(function(c)
    before_review(c, function()
      c:request('draft/status', nil, function(err, entries)
        if err then
          warn(err_msg(err))
          return
        end
        if #entries == 0 then
          info('the draft has no changes')
          return
        end
        local items = {}
        for _, e in ipairs(entries) do
          local what = e.change
          if e.from then
            what = what .. ' from ' .. e.from
          end
          if e.conflict then
            what = what .. ' (conflict: changed since the agent read it)'
          end
          items[#items + 1] = { filename = c:abs(e.path), lnum = 1, text = what }
        end
        vim.fn.setqflist({}, ' ', { title = 'draftfs status (' .. c.info.draft .. ')', items = items })
        vim.cmd('copen')
      end)
    end)
  end)
end

-- split turns the draft's text into lines as Vim reads a file of buf's
-- 'fileformat'.
local function split(body, buf)
  local ff = vim.bo[buf].fileformat
  local lines = vim.split(body, ff == 'mac' and '\r' or '\n', { plain = true })
  if #lines > 1 and lines[#lines] == '' then
    table.remove(lines)
  end
  if ff == 'dos' then
    for i, l in ipairs(lines) do
      lines[i] = l:gsub('\r$', '')
    end
  end
  return lines
end

-- diffs holds the :DraftDiff splits open, by buffer (the draft's and
-- the user's): {c, path, user = buf, draft = buf}.
local diffs = {}

-- map_hunk_keys maps the keys that keep and reject the hunk under the
-- cursor in buf, one of a :DraftDiff split's buffers.
local function map_hunk_keys(buf)
  local keys = cfg.hunk_keys or {}
  if keys.keep then
    vim.keymap.set('n', keys.keep, function()
      M.hunk(true)
    end, { buffer = buf, desc = 'draftfs: commit the hunk under the cursor' })
  end
  if keys.reject then
    vim.keymap.set('n', keys.reject, function()
      M.hunk(false)
    end, { buffer = buf, desc = 'draftfs: discard the hunk under the cursor' })
  end
end

local function unmap_hunk_keys(buf)
  for _, key in pairs(cfg.hunk_keys or {}) do
    if key then
      pcall(vim.keymap.del, 'n', key, { buffer = buf })
    end
  end
end

local function show_diff(c, path, body)
  local orig_win = api.nvim_get_current_win()
  local orig_buf = api.nvim_get_current_buf()
  local ft = vim.bo[orig_buf].filetype
  vim.cmd('vertical new')
  local scratch = api.nvim_get_current_buf()
  vim.bo[scratch].buftype = 'nofile'
  vim.bo[scratch].bufhidden = 'wipe'
  vim.bo[scratch].swapfile = false
  api.nvim_buf_set_lines(scratch, 0, -1, false, split(body, orig_buf))
  vim.bo[scratch].modifiable = false
  local rel = path:sub(#c.root + 2)
  pcall(api.nvim_buf_set_name, scratch, ('draftfs://%s/%s'):format(c.info.draft, rel))
  if ft ~= '' then
    vim.bo[scratch].filetype = ft
  end
  vim.cmd('diffthis')
  api.nvim_win_call(orig_win, function()
    vim.cmd('diffthis')
  end)
  local d = { c = c, path = path, user = orig_buf, draft = scratch }
  diffs[scratch], diffs[orig_buf] = d, d
  map_hunk_keys(scratch)
  map_hunk_keys(orig_buf)
  api.nvim_create_autocmd('BufWipeout', {
    buffer = scratch,
    once = true,
    callback = function()
      diffs[scratch] = nil
      if diffs[orig_buf] == d then
        diffs[orig_buf] = nil
        if api.nvim_buf_is_valid(orig_buf) then
          unmap_hunk_keys(orig_buf)
        end
      end
      if api.nvim_win_is_valid(orig_win) then
        api.nvim_win_call(orig_win, function()
          vim.cmd('diffoff')
        end)
      end
    end,
  })
end

-- refresh_diff shows the draft's version again in a :DraftDiff split.
local function refresh_diff(d)
  d.c:request('draft/read', { path = d.path }, function(err, res)
    if err or not api.nvim_buf_is_valid(d.draft) or res.binary then
      return
    end
    vim.bo[d.draft].modifiable = true
    api.nvim_buf_set_lines(d.draft, 0, -1, false, split(res.text or '', d.user))
    vim.bo[d.draft].modifiable = false
    for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
      local b = api.nvim_win_get_buf(win)
      if b == d.draft or b == d.user then
        api.nvim_win_call(win, function()
          vim.cmd('diffupdate')
        end)
      end
    end
  end)
end

-- covers reports whether line is in the lines start, count of a hunk's
-- side; a side with no lines is where the other side's go, before start.
local function covers(line, start, count)
  if count > 0 then
    return line >= start and line < start + count
  end
  return line == start or line == start - 1
end

-- hunk_at finds the smallest hunk of the draft/hunks answer files at
-- line of one side ('old': the user's text, 'new': the draft's).
local function hunk_at(files, line, side)
  for _, f in ipairs(files or {}) do
    for _, h in ipairs(f.hunks or {}) do
      local units = (h.parts and #h.parts > 0) and h.parts or { h }
      for _, u in ipairs(units) do
        if u.whole then
          return u
        end
        local start = (side == 'old' and u.oldStart or u.newStart) or 0
        local count = (side == 'old' and u.oldLines or u.newLines) or 0
        if covers(line, start, count) then
          return u
        end
      end
    end
  end
end

-- :DraftKeepHunk / :DraftRejectHunk, and their keys in a :DraftDiff
-- split: commit (keep) or discard (reject) the hunk under the cursor,
-- then show the diff again.
function M.hunk(keep)
  local d = diffs[api.nvim_get_current_buf()]
  if not d then
    warn('not in a :DraftDiff split: open one with :DraftDiff')
    return
  end
  local line = api.nvim_win_get_cursor(0)[1]
  local side = api.nvim_get_current_buf() == d.draft and 'new' or 'old'
  local c = d.c
  before_review(c, function()
    c:request('draft/hunks', { paths = { d.path } }, function(err, files)
      if err then
        warn(err_msg(err))
        return
      end
      local h = hunk_at(files, line, side)
      if not h then
        warn(('no change of the draft at line %d'):format(line))
        return
      end
      local method = keep and 'draft/commit' or 'draft/discard'
      c:request(method, { hunks = { h.id } }, function(err2)
        if err2 then
          vim.notify('draftfs: ' .. err_msg(err2), vim.log.levels.ERROR)
          return
        end
        info(('%s the hunk at line %d'):format(keep and 'committed' or 'discarded', line))
        refresh_diff(d)
      end)
    end)
  end)
end

-- :DraftDiff [path]: a diff split of the buffer and the draft's version.
function M.diff(args)
  if #args > 0 then
    local ok, err = pcall(vim.cmd, 'edit ' .. vim.fn.fnameescape(args[1]))
    if not ok then
      warn(tostring(err))
      return
    end
  end
  with_client(function(c)
    local path = current_path(c)
    if not path then
      warn('the current buffer is not a file of the workspace ' .. c.root)
      return
    end
    before_review(c, function()
      c:request('draft/read', { path = path }, function(err, res)
        if err then
          if err.code == rpc.codes.not_found then
            warn(short(path) .. ' is deleted in the draft')
          else
            warn(err_msg(err))
          end
          return
        end
        if res.binary then
          warn(short(path) .. ' is not UTF-8 text in the draft')
          return
        end
        reviewed(path)
        show_diff(c, path, res.text or '')
      end)
    end)
  end)
end

local function list(entries, key)
  local names = {}
  for _, e in ipairs(entries or {}) do
    names[#names + 1] = type(e) == 'table' and e[key] or e
  end
  return table.concat(names, ', ')
end

-- :DraftCommit[!] [path...]
function M.commit(args, force)
  with_client(function(c)
    local params = { force = force or nil }
    if #args > 0 then
      params.paths = paths_of(c, args)
    end
    before_review(c, function()
      c:request('draft/commit', params, function(err, res)
        if err then
          local data = type(err.data) == 'table' and err.data or {}
          if data.kind == 'conflict' and type(data.result) == 'table' then
            local lines = { 'draftfs: commit refused, nothing written:' }
            for _, cf in ipairs(data.result.conflicts or {}) do
              lines[#lines + 1] = ('  %s: %s'):format(cf.path, cf.reason)
            end
            lines[#lines + 1] = ':DraftCommit! writes the draft over them'
            vim.notify(table.concat(lines, '\n'), vim.log.levels.ERROR)
          else
            vim.notify('draftfs: ' .. err_msg(err), vim.log.levels.ERROR)
          end
          return
        end
        local msg = ('committed %d change(s): %s'):format(#(res.applied or {}), list(res.applied, 'path'))
        if res.merged and #res.merged > 0 then
          msg = msg .. '; merged with your changes: ' .. list(res.merged)
        end
        info(msg)
      end)
    end)
  end)
end

-- :DraftDiscard [path...] (the current file when none), :DraftDiscard! (all)
function M.discard(args, all)
  with_client(function(c)
    local params
    if #args > 0 then
      params = { paths = paths_of(c, args) }
    elseif all then
      params = { all = true }
    else
      local path = current_path(c)
      if not path then
        warn('the current buffer is not a file of the workspace: name a path, or :DraftDiscard! for all')
        return
      end
      params = { paths = { path } }
    end
    c:request('draft/discard', params, function(err, res)
      if err then
        vim.notify('draftfs: ' .. err_msg(err), vim.log.levels.ERROR)
        return
      end
      info(('discarded %d change(s): %s'):format(#(res.paths or {}), list(res.paths)))
    end)
  end)
end

-- :DraftUndo
function M.undo()
  with_client(function(c)
    c:request('draft/undo', nil, function(err, res)
      if err then
        vim.notify('draftfs: ' .. err_msg(err), vim.log.levels.ERROR)
        return
      end
      info(('undid commit %s: %s back in the draft'):format(tostring(res.id), list(res.paths)))
    end)
  end)
end

return M
