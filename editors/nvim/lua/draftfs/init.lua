-- draftfs.nvim: shows the user's unsaved buffers to agents working through
-- draftfs, and lets the user review and commit the agent's draft.
--
--   require('draftfs').setup({})
--
-- See :help draftfs.

local api = vim.api
local client = require('draftfs.client')
local review = require('draftfs.review')
local sync = require('draftfs.sync')

local M = {}

M.defaults = {
  -- The draftfs command: a string, or a list with leading arguments.
  cmd = 'draftfs',
  -- The state directory (draftfs --state); nil: draftfs's default.
  state = nil,
  -- The workspace root; nil: the nearest ancestor directory of a file
  -- with a running daemon.
  workspace = nil,
  -- The control socket; nil: g:draftfs_socket, else found with
  -- `draftfs socket`.
  socket = nil,
  -- Changes reach the daemon at most this long after the first one not
  -- sent yet; the changes of that time go as one message.
  debounce_ms = 30,
  -- Reconnecting to a daemon that went away: the first wait, doubled on
  -- each failure up to max_ms.
  reconnect = { initial_ms = 100, max_ms = 5000 },
  -- How often files opened without a running daemon look for one again.
  rescan_ms = 2000,
  -- How long a command waits for a daemon it just found to answer.
  connect_timeout_ms = 2000,
  -- Tell the user when the draft changes a file open in a buffer.
  notify = true,
  -- Changes in a burst of agent writes are told in one notification
  -- sent this long after the first.
  notify_delay_ms = 100,
  -- Buffers larger than this are not sent: agents see the file on disk.
  max_bytes = 32 * 1024 * 1024,
  -- Keys of a :DraftDiff split that commit (keep) or discard (reject)
  -- the hunk under the cursor; false: no key.
  hunk_keys = { keep = '<localleader>k', reject = '<localleader>r' },
}

local function validate(cfg)
  vim.validate({
    cmd = { cfg.cmd, { 'string', 'table' } },
    state = { cfg.state, 'string', true },
    workspace = { cfg.workspace, 'string', true },
    socket = { cfg.socket, 'string', true },
    debounce_ms = { cfg.debounce_ms, 'number' },
    reconnect = { cfg.reconnect, 'table' },
    rescan_ms = { cfg.rescan_ms, 'number' },
    connect_timeout_ms = { cfg.connect_timeout_ms, 'number' },
    notify = { cfg.notify, 'boolean' },
    notify_delay_ms = { cfg.notify_delay_ms, 'number' },
    max_bytes = { cfg.max_bytes, 'number' },
    hunk_keys = { cfg.hunk_keys, 'table' },
  })
end

local function commands()
  local function cmd(name, fn, opts)
    api.nvim_create_user_command(name, fn, opts)
  end
  cmd('DraftStatus', function()
    review.status()
  end, { nargs = 0, desc = 'draftfs: the draft changes in the quickfix list' })
  cmd('DraftDiff', function(a)
    review.diff(a.args ~= '' and { a.args } or {})
  end, { nargs = '?', complete = 'file', desc = "draftfs: diff the buffer with the draft's version" })
  cmd('DraftCommit', function(a)
    review.commit(a.fargs, a.bang)
  end, { nargs = '*', bang = true, complete = 'file', desc = 'draftfs: commit the draft (or paths) to disk' })
  cmd('DraftDiscard', function(a)
    review.discard(a.fargs, a.bang)
  end, { nargs = '*', bang = true, complete = 'file', desc = 'draftfs: drop draft changes (! all of them)' })
  cmd('DraftKeepHunk', function()
    review.hunk(true)
  end, { nargs = 0, desc = 'draftfs: commit the hunk under the cursor of a :DraftDiff split' })
  cmd('DraftRejectHunk', function()
    review.hunk(false)
  end, { nargs = 0, desc = 'draftfs: discard the hunk under the cursor of a :DraftDiff split' })
  cmd('DraftUndo', function()
    review.undo()
  end, { nargs = 0, desc = 'draftfs: revert the last commit' })
end

-- leave closes every buffer in its daemon before Neovim exits, waiting a
-- little for the messages to leave: a daemon keeps what it is not told.
local function leave()
  sync.flush_all()
  sync.close_all()
  local done = false
  client.stop_all(function()
    done = true
  end)
  vim.wait(500, function()
    return done
  end, 10)
end

function M.setup(opts)
  local cfg = vim.tbl_deep_extend('force', M.defaults, opts or {})
  if cfg.socket == nil and vim.g.draftfs_socket ~= nil and vim.g.draftfs_socket ~= '' then
    cfg.socket = vim.g.draftfs_socket
  end
  validate(cfg)
  M.config = cfg
  client.configure(cfg, {
    on_ready = sync.on_ready,
    on_down = sync.on_down,
    on_notify = review.on_notify,
  })
  sync.configure(cfg)
  review.configure(cfg)

  local group = api.nvim_create_augroup('draftfs', { clear = true })
  local function au(events, fn, pattern)
    api.nvim_create_autocmd(events, { group = group, pattern = pattern, callback = fn })
  end
  -- Deferred: 'buftype' of special buffers is set after they are read.
  au({ 'BufReadPost', 'BufNewFile', 'BufFilePost' }, function(a)
    vim.schedule(function()
      sync.track(a.buf)
    end)
  end)
  au('BufWritePost', function(a)
    sync.saved(a.buf, vim.fn.fnamemodify(a.file, ':p'))
  end)
  au('BufUnload', function(a)
    sync.untrack(a.buf)
  end)
  au('OptionSet', function()
    sync.touch(api.nvim_get_current_buf())
  end, { 'fileformat', 'endofline', 'fixendofline', 'binary', 'bomb', 'fileencoding' })
  au('VimLeavePre', leave)
  commands()

  for _, buf in ipairs(api.nvim_list_bufs()) do
    sync.track(buf)
  end
end

-- flush sends every buffer change not sent yet, now.
M.flush = sync.flush_all

-- state describes how buf is synced, nil when it is not (not a file of a
-- workspace, or not loaded): {file, path, socket, connected, opened,
-- version, pending, fulls, ranges, resyncs, problem}: fulls and ranges
-- count the full texts and the line ranges sent, resyncs the times the
-- daemon found its text differed and asked for the full text.
M.state = sync.state

return M
