-- Reviewing the agent's draft: notifications, :DraftDiff, :DraftStatus,
-- :DraftCommit, :DraftDiscard, :DraftUndo.

local T = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helper.lua')
local api = vim.api

local ws = T.tmp .. '/ws'
local mnt = T.can_mount and T.tmp .. '/mnt' or nil
local d, probe

T.setup(function()
  T.mkdir(ws)
  d = T.daemon(ws, { mount = mnt })
  probe = T.probe(d)
  require('draftfs').setup({ cmd = T.bin, state = T.state, debounce_ms = 10 })
end)

local function edit(name, content)
  local path = ws .. '/' .. name
  T.write_file(path, content)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local buf = api.nvim_get_current_buf()
  T.wait('the daemon to open ' .. name, function()
    local st = require('draftfs').state(buf)
    return st and st.opened and T.buffer(probe, path, ws)
  end)
  return buf, path
end

local function lines(buf)
  return api.nvim_buf_get_lines(buf, 0, -1, true)
end

local function status()
  return probe:call('draft/status') or {}
end

-- ended waits until the draft has no changes left.
local function ended()
  T.wait('the draft to be empty', function()
    return #status() == 0
  end)
end

T.case('a sed -i of an open file is told as modified, not renamed', function()
  local buf, path = edit('sedded.txt', 'mine\n')
  -- sed -i writes a temporary file beside it and renames it over.
  local tmp = ws .. '/sedXk3Q9a'
  T.agent_write(probe, tmp, 'sedded\n')
  local _, err = probe:call('fs/rename', { source = 'mcp', from = tmp, to = path })
  T.ok(not err, 'fs/rename: %s', vim.inspect(err))
  local msg = T.noted('sedded.txt')
  T.ok(msg:find('sedded.txt (modified)', 1, true), 'the notification says modified: %s', msg)
  T.ok(not msg:find('renamed', 1, true), 'the notification says renamed: %s', msg)
  T.eq('modified', vim.b[buf].draftfs_change, 'b:draftfs_change')
  probe:call('draft/discard', { all = true })
  ended()
  T.notes = {}
end)

T.case('a draft change to an open file is told', function()
  local buf, path = edit('told.txt', 'mine\n')
  T.agent_write(probe, path, 'theirs\n')
  local msg = T.noted('the draft changed')
  T.ok(msg:find('told.txt', 1, true), 'the notification names the file: %s', msg)
  T.eq('modified', vim.b[buf].draftfs_change, 'b:draftfs_change')
  T.eq({ 'mine' }, lines(buf), 'the buffer (never changed by the agent)')
  -- Files not open are not told about.
  T.notes = {}
  T.agent_write(probe, ws .. '/closed.txt', 'x\n')
  T.sleep(300)
  T.eq({}, T.notes, 'notifications for a file not open')
  probe:call('draft/discard', { all = true })
  ended()
end)

T.case('a write through the mount is told', function()
  if not mnt then
    T.log('skipped: no FUSE mount')
    return
  end
  edit('viamount.txt', 'one\n')
  T.write_file(mnt .. '/viamount.txt', 'two\n')
  local msg = T.noted('the draft changed')
  T.ok(msg:find('viamount.txt', 1, true), 'the notification names the file: %s', msg)
  T.eq('one\n', T.read_file(ws .. '/viamount.txt'), 'the disk')
  probe:call('draft/discard', { all = true })
  ended()
end)

T.case(':DraftDiff shows the draft beside the buffer', function()
  local buf, path = edit('diff.txt', 'a\r\nb\r\nc\r\n')
  api.nvim_buf_set_lines(buf, 0, 1, true, { 'unsaved' })
  T.agent_write(probe, path, 'unsaved\r\nB\r\nc\r\nd\r\n')
  vim.cmd('DraftDiff')
  T.wait('the diff split', function()
    return #api.nvim_tabpage_list_wins(0) == 2
  end)
  local scratch = api.nvim_get_current_buf()
  T.ok(scratch ~= buf, 'the draft is in a buffer of its own')
  T.eq({ 'unsaved', 'B', 'c', 'd' }, lines(scratch), "the draft's version")
  T.ok(api.nvim_buf_get_name(scratch):find('draftfs://main/diff.txt', 1, true), 'its name: %s', api.nvim_buf_get_name(scratch))
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    T.eq(true, vim.wo[win].diff, "'diff' in window " .. win)
  end
  vim.cmd('close')
  T.eq(false, vim.wo.diff, "'diff' after the draft's window closed")
  probe:call('draft/discard', { all = true })
  ended()
end)

T.case(':DraftDiff keeps one hunk and rejects another', function()
  local base = {}
  for i = 1, 20 do
    base[#base + 1] = tostring(i)
  end
  local buf, path = edit('hunks.txt', table.concat(base, '\n') .. '\n')
  local agent = vim.deepcopy(base)
  agent[2], agent[18] = 'two', 'eighteen'
  T.agent_write(probe, path, table.concat(agent, '\n') .. '\n')
  vim.cmd('DraftDiff')
  T.wait('the diff split', function()
    return #api.nvim_tabpage_list_wins(0) == 2
  end)
  local scratch = api.nvim_get_current_buf()
  T.ok(scratch ~= buf, 'the draft is in a buffer of its own')
  -- Keep line 2, from the draft's window, with the key.
  api.nvim_win_set_cursor(0, { 2, 0 })
  api.nvim_feedkeys('\\k', 'mx', false)
  local kept = vim.deepcopy(base)
  kept[2] = 'two'
  T.wait('line 2 committed to disk', function()
    return T.read_file(path) == table.concat(kept, '\n') .. '\n'
  end)
  T.wait('the buffer read again from disk', function()
    return lines(buf)[2] == 'two'
  end)
  local st = status()
  T.eq(1, #st, 'changes left in the draft')
  -- Reject line 18, from the user's window.
  vim.cmd('wincmd p')
  T.eq(buf, api.nvim_get_current_buf(), "the user's window")
  api.nvim_win_set_cursor(0, { 18, 0 })
  api.nvim_feedkeys('\\r', 'mx', false)
  ended()
  T.eq(table.concat(kept, '\n') .. '\n', T.read_file(path), 'the disk after the rejection')
  T.wait("the draft's window shows what is left", function()
    local l = lines(scratch)
    return l[2] == 'two' and l[18] == '18'
  end)
  vim.cmd('wincmd p')
  vim.cmd('close')
  -- Undo puts the kept hunk back in the draft.
  vim.cmd('DraftUndo')
  T.wait('the undo', function()
    return T.read_file(path) == table.concat(base, '\n') .. '\n'
  end)
  probe:call('draft/discard', { all = true })
  ended()
end)

T.case(':DraftStatus lists the changes in the quickfix list', function()
  T.agent_write(probe, ws .. '/st-new.txt', 'new\n')
  T.write_file(ws .. '/st-old.txt', 'old\n')
  T.agent_write(probe, ws .. '/st-old.txt', 'changed\n')
  vim.cmd('DraftStatus')
  local qf = T.wait('the quickfix list', function()
    local items = vim.fn.getqflist()
    return #items == 2 and items
  end)
  local got = {}
  for _, it in ipairs(qf) do
    got[#got + 1] = vim.fn.bufname(it.bufnr):gsub('^.*/', '') .. ': ' .. it.text
  end
  table.sort(got)
  T.eq({ 'st-new.txt: added', 'st-old.txt: modified' }, got, 'the quickfix list')
  vim.cmd('cclose')
  probe:call('draft/discard', { all = true })
  ended()
end)

T.case(':DraftCommit lands the draft and reloads clean buffers only', function()
  local clean, cpath = edit('c-clean.txt', 'clean\n')
  local dirty, dpath = edit('c-dirty.txt', 'one\ntwo\nthree\n')
  api.nvim_buf_set_lines(dirty, 0, 1, true, { 'ONE' }) -- unsaved
  T.agent_write(probe, cpath, 'committed\n')
  T.agent_write(probe, dpath, 'one\ntwo\nTHREE\n')
  T.noted('the draft changed')
  vim.cmd('DraftCommit')
  T.noted('committed 2 change')
  T.eq('committed\n', T.read_file(cpath), 'the disk')
  -- How the commit merges the agent's change with the unsaved one is the
  -- engine's business; the agent's change is on disk.
  T.ok(T.read_file(dpath):find('THREE\n$'), 'the disk holds the agent change: %q', T.read_file(dpath))
  T.wait('the clean buffer to reload', function()
    return vim.deep_equal(lines(clean), { 'committed' })
  end)
  T.noted('c%-dirty.txt changed on disk; your unsaved changes are kept')
  T.eq({ 'ONE', 'two', 'three' }, lines(dirty), 'the buffer with unsaved changes')
  T.eq(true, vim.bo[dirty].modified, 'still modified')
  T.eq(nil, vim.b[clean].draftfs_change, 'b:draftfs_change after the commit')
  -- The daemon holds the reloaded text, marked saved.
  T.wait('the daemon to hold the reloaded buffer', function()
    local b = T.buffer(probe, cpath, ws)
    return b and not b.dirty and T.text(probe, cpath) == 'committed\n'
  end)
  ended()
end)

T.case(':DraftCommit [path] and :DraftDiscard [path]', function()
  T.write_file(ws .. '/p-a.txt', 'a\n')
  T.write_file(ws .. '/p-b.txt', 'b\n')
  T.agent_write(probe, ws .. '/p-a.txt', 'A\n')
  T.agent_write(probe, ws .. '/p-b.txt', 'B\n')
  vim.cmd('cd ' .. ws)
  vim.cmd('DraftCommit p-a.txt')
  T.noted('committed 1 change')
  T.eq('A\n', T.read_file(ws .. '/p-a.txt'), 'the committed file')
  -- The draft's log says the editor committed it.
  local log = probe:call('draft/log', {})
  local commit
  for _, e in ipairs(log) do
    if e.op == 'commit' then
      commit = e
    end
  end
  T.eq('editor', commit and commit.source, 'the source of the commit in the log')
  T.eq('draftfs.nvim', commit and commit.by, 'who committed, in the log')
  T.eq('b\n', T.read_file(ws .. '/p-b.txt'), 'the other file')
  local buf = edit('p-b.txt', 'b\n')
  T.eq(buf, api.nvim_get_current_buf(), 'the current buffer')
  vim.cmd('DraftDiscard')
  T.noted('discarded 1 change')
  ended()
  T.eq('b\n', T.read_file(ws .. '/p-b.txt'), 'the discarded file on disk')
  T.eq('b\n', T.text(probe, ws .. '/p-b.txt'), 'the merged view after discard')
  vim.cmd('cd -')
end)

T.case('a conflict refuses the commit; ! forces it', function()
  local buf, path = edit('conflict.txt', 'line\n')
  T.agent_write(probe, path, 'agent\n')
  api.nvim_buf_set_lines(buf, 0, 1, true, { 'user' })
  require('draftfs').flush()
  vim.cmd('DraftCommit')
  T.noted('commit refused')
  T.eq('line\n', T.read_file(path), 'the disk after a refused commit')
  vim.cmd('DraftCommit!')
  T.noted('committed 1 change')
  T.eq('agent\n', T.read_file(path), 'the disk after a forced commit')
  T.eq({ 'user' }, lines(buf), 'the buffer with unsaved changes')
end)

T.case(':DraftUndo reverts the last commit', function()
  local buf, path = edit('undo.txt', 'before\n')
  T.agent_write(probe, path, 'after\n')
  vim.cmd('DraftCommit')
  T.wait('the buffer to reload', function()
    return vim.deep_equal(lines(buf), { 'after' })
  end)
  vim.cmd('DraftUndo')
  T.noted('undid commit')
  T.eq('before\n', T.read_file(path), 'the disk after undo')
  T.wait('the buffer to reload after undo', function()
    return vim.deep_equal(lines(buf), { 'before' })
  end)
  T.eq(1, #status(), 'changes back in the draft')
  probe:call('draft/discard', { all = true })
  ended()
end)

T.case(':help draftfs', function()
  local doc = T.mkdir(T.tmp .. '/help/doc')
  T.write_file(doc .. '/draftfs.txt', T.read_file(T.plugin .. '/doc/draftfs.txt'))
  vim.cmd('helptags ' .. doc)
  vim.opt.runtimepath:append(T.tmp .. '/help')
  for _, topic in ipairs({ 'draftfs', ':DraftDiff', ':DraftCommit', 'draftfs-options', 'g:draftfs_socket' }) do
    vim.cmd('help ' .. topic)
    T.eq('draftfs.txt', vim.fn.expand('%:t'), ':help ' .. topic)
    vim.cmd('helpclose')
  end
end)

T.run()
