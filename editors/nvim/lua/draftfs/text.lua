-- The bytes `:w` would write for a buffer, built from its lines and
-- options. Buffer lines never hold the line ending: 'fileformat' chooses
-- it, 'endofline'/'fixendofline'/'binary' whether the last line gets one,
-- 'bomb' and 'fileencoding' what comes before and how characters are
-- written, and a buffer Vim marks empty writes nothing at all.

local api = vim.api

local M = {}

local BOM = '\239\187\191'

-- format describes how buf is written:
--   nl     line ending
--   eol    whether the last line ends with nl
--   bom    whether a byte order mark comes first
--   fenc   the encoding to convert to, nil for UTF-8
--   simple whether the text maps line for line onto the daemon's lines
--          (see sync.lua): a plain UTF-8 file with \n or \r\n endings
function M.format(buf)
  local bo = vim.bo[buf]
  local binary = bo.binary
  local f = { nl = '\n', eol = bo.endofline or (not binary and bo.fixendofline) }
  if not binary then
    if bo.fileformat == 'dos' then
      f.nl = '\r\n'
    elseif bo.fileformat == 'mac' then
      f.nl = '\r'
    end
    local fenc = bo.fileencoding
    local utf8 = fenc == '' or fenc == 'utf-8' or fenc == 'utf8'
    if not utf8 then
      f.fenc = fenc
    end
    -- 'bomb' applies to the Unicode encodings only; iconv turns U+FEFF
    -- into the right bytes for the UTF-16 and UCS ones.
    f.bom = bo.bomb and (utf8 or fenc:match('^u[ct][fs]') ~= nil)
  end
  f.simple = f.nl ~= '\r' and not f.bom and not f.fenc
  return f
end

-- same reports whether two formats write the same way.
function M.same(a, b)
  return a.nl == b.nl and a.eol == b.eol and a.bom == b.bom and a.fenc == b.fenc
end

-- is_empty reports whether buf, showing one empty line, writes an empty
-- file: Vim's "--No lines in buffer--" state, or one line without an end.
-- The line count cannot tell it apart from a file holding one newline.
function M.is_empty(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, 2, false)
  if #lines ~= 1 or lines[1] ~= '' then
    return false
  end
  return api.nvim_buf_call(buf, function()
    return vim.fn.wordcount().bytes == 0
  end)
end

-- valid_utf8 reports whether s is UTF-8 as Go's utf8.Valid sees it (no
-- surrogates, no overlong forms): the daemon refuses anything else.
function M.valid_utf8(s)
  local i, n = 1, #s
  while true do
    i = s:find('[\128-\255]', i)
    if not i then
      return true
    end
    local c = s:byte(i)
    local len
    if c >= 0xC2 and c <= 0xDF then
      len = 2
    elseif c >= 0xE0 and c <= 0xEF then
      len = 3
    elseif c >= 0xF0 and c <= 0xF4 then
      len = 4
    else
      return false
    end
    if i + len - 1 > n then
      return false
    end
    local c2 = s:byte(i + 1)
    if
      (c == 0xE0 and c2 < 0xA0)
      or (c == 0xED and c2 > 0x9F)
      or (c == 0xF0 and c2 < 0x90)
      or (c == 0xF4 and c2 > 0x8F)
    then
      return false
    end
    for j = i + 1, i + len - 1 do
      local b = s:byte(j)
      if b < 0x80 or b > 0xBF then
        return false
      end
    end
    i = i + len
  end
end

-- has_cr reports whether any line holds a carriage return: the daemon
-- counts "\r" as a line break, Vim does not, so such buffers go whole.
function M.has_cr(lines)
  for _, l in ipairs(lines) do
    if l:find('\r', 1, true) then
      return true
    end
  end
  return false
end

-- build returns what `:w` would write for buf with format f, or nil and
-- why the text cannot be sent (the socket carries UTF-8 text only).
function M.build(buf, f)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local text
  if #lines == 1 and lines[1] == '' and M.is_empty(buf) then
    text = ''
  else
    text = table.concat(lines, f.nl)
    if f.eol then
      text = text .. f.nl
    end
  end
  if f.bom then
    text = BOM .. text
  end
  if f.fenc then
    local converted = vim.fn.iconv(text, 'utf-8', f.fenc)
    if converted == '' and text ~= '' then
      return nil, ("cannot convert to 'fileencoding' %s"):format(f.fenc), lines
    end
    text = converted
  end
  if not M.valid_utf8(text) then
    if f.fenc then
      return nil, ("written as %s, not UTF-8"):format(f.fenc), lines
    end
    return nil, 'not valid UTF-8', lines
  end
  return text, nil, lines
end

-- length is the byte length of what `:w` writes for buf, which holds n
-- lines and is not empty, with a simple format f.
function M.length(buf, n, f)
  -- nvim_buf_get_offset counts one byte per line end, the last one only
  -- when it would be written.
  local ends = n - 1 + (f.eol and 1 or 0)
  return api.nvim_buf_get_offset(buf, n) + (#f.nl - 1) * ends
end

return M
