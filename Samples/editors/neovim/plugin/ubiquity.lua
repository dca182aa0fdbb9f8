-- Ubiquity for Neovim: buffers of files in a folder `ubiq daemon` syncs are file presenters.
-- A remote change reloads an unmodified buffer and warns about a modified one; saves are
-- coordinated writes (other presenters save first and hear of the change); the status line
-- shows the sync state (uploading n %, downloading n %, evicted…); opening an evicted file
-- downloads it first. Commands: :UbiquityStatus, :UbiquityVersions, :UbiquityResolve,
-- :UbiquityDiff. Installed by `ubiq editor install neovim`; documented in docs/editors.md.
--
-- Options: vim.g.ubiquity_command ('ubiq'), vim.g.ubiquity_save_timeout (seconds, 10),
-- vim.g.ubiquity_statusline (1: set 'statusline' when it is empty).
-- Events for your own autocommands: User UbiquityReloaded, User UbiquityChangedRemotely,
-- User UbiquityState (b:ubiquity_state holds the text, b:ubiquity_conflicts the count).

if vim.g.loaded_ubiquity then return end
vim.g.loaded_ubiquity = 1

local function option(name, default)
  local value = vim.g[name]
  if value == nil then return default end
  return value
end

local command = option('ubiquity_command', 'ubiq')
local save_timeout = option('ubiquity_save_timeout', 10)
local sessions = {}        -- buffer -> {job, path, synced, next, answers, writing, partial}
local saving_for_request = false

local function warn(text)
  vim.api.nvim_echo({ { 'Ubiquity: ' .. text, 'WarningMsg' } }, true, {})
end

local function send(buf, message)
  local session = sessions[buf]
  if not session then return false end
  local ok = pcall(vim.fn.chansend, session.job, vim.fn.json_encode(message) .. '\n')
  return ok
end

local function fire(event, buf)
  vim.g.ubiquity_event_buffer = buf
  if vim.fn.exists('#User#' .. event) == 1 then
    vim.cmd('doautocmd <nomodeline> User ' .. event)
  end
end

local function state_text(message)
  local sync = message.sync
  if sync == nil or sync == vim.NIL then return '' end
  if message.excluded == true or sync == 'excluded' then return 'excluded' end
  if (message.conflicts or 0) > 0 or sync == 'in conflict' then return 'conflict' end
  if (sync == 'uploading' or sync == 'downloading') and message.progress ~= nil and message.progress ~= vim.NIL then
    return sync .. ' ' .. tostring(message.progress) .. ' %'
  end
  return sync
end

local function show_state(buf, message)
  if not vim.api.nvim_buf_is_valid(buf) then return end
  local text = state_text(message)
  local before = vim.b[buf].ubiquity_state or ''
  local conflicts = message.conflicts or 0
  vim.b[buf].ubiquity_state = text
  vim.b[buf].ubiquity_conflicts = conflicts
  -- a save by rename drops the skip-backup attribute: save excluded files in place
  pcall(vim.api.nvim_buf_set_option, buf, 'backupcopy', text == 'excluded' and 'yes' or '')
  if text == 'conflict' and before ~= 'conflict' then
    warn(vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t') .. ' has ' .. conflicts
      .. ' conflict version(s): :UbiquityVersions to see them, :UbiquityResolve to settle')
  end
  if text ~= before then
    vim.cmd('redrawstatus!')
    fire('UbiquityState', buf)
  end
end

local function remote_change(buf)
  local session = sessions[buf]
  if not session or vim.fn.filereadable(session.path) == 0 or not vim.api.nvim_buf_is_valid(buf) then return end
  if vim.bo[buf].modified then
    vim.b[buf].ubiquity_changed_remotely = 1
    warn(vim.fn.fnamemodify(session.path, ':t') .. ' changed on another device and has unsaved changes here: '
      .. ':UbiquityDiff to compare, :edit! to take the other version, :write to keep yours')
    vim.cmd('redrawstatus!')
    fire('UbiquityChangedRemotely', buf)
    return
  end
  vim.b[buf].ubiquity_changed_remotely = 0
  local window = vim.fn.bufwinid(buf)
  if window ~= -1 then
    vim.api.nvim_win_call(window, function()
      local view = vim.fn.winsaveview()
      vim.cmd('silent! edit')
      vim.fn.winrestview(view)
    end)
  else
    vim.bo[buf].autoread = true
    vim.cmd('silent! checktime ' .. buf)
  end
  fire('UbiquityReloaded', buf)
end

-- Another program's coordinated access asks for unsaved changes first: save, then answer.
local function save_on_request(buf, id)
  local err
  if vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].modified then
    saving_for_request = true
    local ok, message = pcall(vim.api.nvim_buf_call, buf, function() vim.cmd('silent write') end)
    saving_for_request = false
    if not ok then err = tostring(message) end
  end
  send(buf, err and { ack = id, error = err } or { ack = id })
end

local function on_message(buf, line)
  local session = sessions[buf]
  if not session or line == '' then return end
  local ok, message = pcall(vim.fn.json_decode, line)
  if not ok or type(message) ~= 'table' then return end
  local event = message.event
  if event == 'ready' then
    session.synced = message.synced == true
    vim.b[buf].ubiquity_synced = session.synced and 1 or 0
    if session.synced then send(buf, { cmd = 'state' }) end
  elseif event == 'granted' or event == 'failed' then
    session.answers[message.id or 0] = message
  elseif event == 'state' then
    show_state(buf, message)
  elseif event == 'didChange' then
    remote_change(buf)
  elseif event == 'didMove' then
    session.path = message.to or session.path
    vim.api.nvim_echo({ { 'Ubiquity: moved to ' .. session.path } }, true, {})
  elseif event == 'savePresentedItemChanges' then
    save_on_request(buf, message.id or 0)
  elseif event == 'restored' then
    warn('an interrupted save of ' .. session.path .. ' was undone (' .. (message.reason or '') .. ')')
  end
end

local function attach(buf)
  if sessions[buf] or vim.bo[buf].buftype ~= '' then return end
  local path = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':p')
  if path == '' or path:match('^%a+://') or vim.fn.isdirectory(path) == 1 then return end
  if vim.fn.executable(command) == 0 then return end
  local session = { path = path, synced = false, next = 1, answers = {}, writing = 0, partial = '' }
  local job = vim.fn.jobstart({ command, 'present', '--editor', '--only-synced', path }, {
    on_stdout = function(_, data)
      -- data: lines split at newlines; the last item is an unfinished line
      data[1] = session.partial .. data[1]
      session.partial = data[#data]
      for i = 1, #data - 1 do on_message(buf, data[i]) end
    end,
    on_exit = function()
      if sessions[buf] == session then
        sessions[buf] = nil
        if vim.api.nvim_buf_is_valid(buf) then vim.b[buf].ubiquity_state = '' end
      end
    end,
  })
  if job <= 0 then return end
  session.job = job
  sessions[buf] = session
end

local function detach(buf)
  local session = sessions[buf]
  if not session then return end
  sessions[buf] = nil
  pcall(vim.fn.chanclose, session.job, 'stdin')
end

local function before_write(buf)
  local session = sessions[buf]
  if not session or not session.synced or saving_for_request then return end
  if vim.fn.expand('<afile>:p') ~= session.path then return end
  local id = session.next
  session.next = id + 1
  if not send(buf, { cmd = 'begin-write', id = id, timeout = save_timeout }) then return end
  vim.wait((save_timeout + 2) * 1000, function() return session.answers[id] ~= nil end, 2)
  local answer = session.answers[id] or { event = 'failed', error = 'no answer' }
  session.answers[id] = nil
  if answer.event ~= 'granted' then
    warn('saving without coordination (' .. tostring(answer.error) .. ')')
    return
  end
  if answer.excluded == true then pcall(vim.api.nvim_buf_set_option, buf, 'backupcopy', 'yes') end
  session.writing = id
  -- runs once the write is over: if BufWritePost did not run, the write failed
  vim.defer_fn(function()
    if sessions[buf] == session and session.writing == id then
      send(buf, { cmd = 'abort-write', id = id, reason = 'the save failed' })
      session.writing = 0
    end
  end, 0)
end

local function after_write(buf)
  local session = sessions[buf]
  if not session or session.writing == 0 then return end
  if vim.bo[buf].modified then
    -- BufWritePost runs after some failed writes too: the buffer is still modified then
    send(buf, { cmd = 'abort-write', id = session.writing, reason = 'the save failed' })
  else
    send(buf, { cmd = 'end-write', id = session.writing })
  end
  session.writing = 0
end

local function run(arguments)
  local argv = { command }
  vim.list_extend(argv, arguments)
  local output = vim.fn.system(argv)
  return vim.v.shell_error, output
end

-- BufReadPre, FileReadPre: an evicted file (nothing at its name, its hidden stub .NAME.icloud
-- beside it) is downloaded before Neovim reads it. Only a missing file with a stub asks
-- `ubiq download --only-evicted`.
local function download_before_read(file)
  if file == nil or file == '' or file:match('^%a+://') then return end
  local path = vim.fn.fnamemodify(file, ':p')
  if vim.fn.getftype(path) ~= '' or vim.fn.executable(command) ~= 1 then return end
  local stub = vim.fn.fnamemodify(path, ':h') .. '/.' .. vim.fn.fnamemodify(path, ':t') .. '.icloud'
  if vim.fn.filereadable(stub) ~= 1 then return end
  vim.api.nvim_echo({ { 'Ubiquity: downloading ' .. vim.fn.fnamemodify(path, ':t') .. ' (evicted)…' } }, false, {})
  vim.cmd('redraw')
  local status, output = run({ 'download', '--only-evicted', path })
  if status ~= 0 then
    vim.api.nvim_echo({ { 'Ubiquity: ' .. vim.fn.fnamemodify(path, ':t') .. ' is evicted and could not be downloaded ('
      .. vim.trim(output) .. '); the buffer is empty', 'WarningMsg' } }, true, {})
  else
    vim.api.nvim_echo({ { '' } }, false, {})
  end
end

-- BufNewFile: Neovim reads no file that is not there, so an evicted file is downloaded here
-- and read into the new buffer, as if it had been there when it was opened.
local function download_new_file(file)
  if file == nil or file == '' then return end
  local path = vim.fn.fnamemodify(file, ':p')
  download_before_read(path)
  if vim.fn.getftype(path) ~= 'file' then return end
  vim.cmd('silent keepalt read ++edit ' .. vim.fn.fnameescape(path))
  vim.cmd('silent 1delete _')
  vim.bo.modified = false
end

_G.UbiquityStatus = function()
  local text = vim.b.ubiquity_state or ''
  if text == '' then return '' end
  -- a remote change not taken yet (the buffer has unsaved changes) stays visible here
  local remote = vim.b.ubiquity_changed_remotely == 1 and ', changed remotely: :UbiquityDiff' or ''
  return ' [ubiq: ' .. text .. remote .. ']'
end
vim.cmd([[function! UbiquityStatus() abort
  return v:lua.UbiquityStatus()
endfunction]])

local function versions()
  local path = vim.fn.expand('%:p')
  local status, output = run({ 'versions', path, '--json' })
  if status ~= 0 then return warn(vim.trim(output)) end
  local listing = vim.fn.json_decode(output)
  local lines = { '" versions of ' .. path .. ' (Enter: open; :UbiquityResolve ID keeps one)' }
  for _, version in ipairs(listing.versions or {}) do
    table.insert(lines, string.format('%s  %s  %s  %s  %s', version.id, version.conflict and 'conflict' or 'version ',
      tostring(version.modified), tostring(version.device), version.url))
  end
  local file = vim.api.nvim_get_current_buf()
  vim.cmd('new')
  vim.b.ubiquity_versions_of = file
  vim.bo.buftype = 'nofile'
  vim.bo.bufhidden = 'wipe'
  vim.bo.swapfile = false
  vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
  vim.bo.modifiable = false
  vim.keymap.set('n', '<CR>', function()
    local line = vim.api.nvim_get_current_line()
    if line:sub(1, 1) == '"' then return end
    local fields = vim.split(line, '  ', { plain = true })
    if #fields < 5 then return end
    vim.cmd('vertical new ' .. vim.fn.fnameescape(fields[#fields]))
    vim.b.ubiquity_versions_of = file
    vim.bo.readonly = true
    vim.bo.modifiable = false
  end, { buffer = true, silent = true })
end

local function resolve(keep)
  if keep == nil or keep == '' then keep = 'current' end
  -- from the versions list or an opened version: the file they belong to
  local buf = vim.b.ubiquity_versions_of or vim.api.nvim_get_current_buf()
  local path = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':p')
  local status, output = run({ 'resolve', path, '--keep', keep })
  if status ~= 0 then return warn(vim.trim(output)) end
  vim.api.nvim_echo({ { 'Ubiquity: conflicts of ' .. vim.fn.fnamemodify(path, ':t') .. ' resolved (kept ' .. keep .. ')' } }, true, {})
  send(buf, { cmd = 'state' })
end

local function diff()
  local filetype = vim.bo.filetype
  vim.cmd('vertical new')
  vim.bo.buftype = 'nofile'
  vim.bo.bufhidden = 'wipe'
  vim.bo.swapfile = false
  vim.cmd('read ++edit #')
  vim.cmd('0delete _')
  vim.bo.filetype = filetype
  vim.cmd('diffthis | wincmd p | diffthis')
end

vim.api.nvim_create_user_command('UbiquityStatus', function()
  local text = vim.b.ubiquity_state or ''
  print(text == '' and 'Ubiquity: not in a synced folder' or 'Ubiquity: ' .. text)
end, {})
vim.api.nvim_create_user_command('UbiquityVersions', versions, {})
vim.api.nvim_create_user_command('UbiquityResolve', function(opts) resolve(opts.args) end, { nargs = '?' })
vim.api.nvim_create_user_command('UbiquityDiff', diff, {})

local group = vim.api.nvim_create_augroup('ubiquity', { clear = true })
vim.api.nvim_create_autocmd({ 'BufReadPre', 'FileReadPre' }, { group = group, callback = function(args) download_before_read(args.file) end })
vim.api.nvim_create_autocmd('BufNewFile', { group = group, callback = function(args) download_new_file(args.file) end })
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, { group = group, callback = function(args) attach(args.buf) end })
vim.api.nvim_create_autocmd('BufWritePre', { group = group, callback = function(args) before_write(args.buf) end })
vim.api.nvim_create_autocmd('BufWritePost', { group = group, callback = function(args) after_write(args.buf) end })
vim.api.nvim_create_autocmd('BufDelete', { group = group, callback = function(args) detach(args.buf) end })
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufWritePost' }, { group = group, callback = function(args)
  vim.b[args.buf].ubiquity_changed_remotely = 0
end })

if option('ubiquity_statusline', 1) == 1 and vim.o.statusline == '' then
  vim.o.statusline = '%<%f %h%m%r%{UbiquityStatus()}%=%-14.(%l,%c%V%) %P'
end
