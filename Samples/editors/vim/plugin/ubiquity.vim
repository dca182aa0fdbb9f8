" Ubiquity for Vim: buffers of files in a folder `ubiq daemon` syncs are file presenters.
" A remote change reloads an unmodified buffer and warns about a modified one; saves are
" coordinated writes (other presenters save first and hear of the change); the status line
" shows the sync state (uploading n %, downloading n %, evicted…); opening an evicted file
" downloads it first. Commands: :UbiquityStatus, :UbiquityVersions, :UbiquityResolve,
" :UbiquityDiff. Installed by `ubiq editor install vim`; documented in docs/editors.md.
"
" Options: g:ubiquity_command ('ubiq'), g:ubiquity_save_timeout (seconds, 10),
" g:ubiquity_statusline (1: set 'statusline' when it is empty).
" Events for your own autocommands: User UbiquityReloaded, User UbiquityChangedRemotely,
" User UbiquityState (b:ubiquity_state holds the text, b:ubiquity_conflicts the count).

if exists('g:loaded_ubiquity') || !has('job') || !has('timers')
  finish
endif
let g:loaded_ubiquity = 1

let g:ubiquity_command = get(g:, 'ubiquity_command', 'ubiq')
let g:ubiquity_save_timeout = get(g:, 'ubiquity_save_timeout', 10)
let g:ubiquity_statusline = get(g:, 'ubiquity_statusline', 1)

" buffer number -> {'job', 'path', 'synced', 'next', 'answers', 'writing'}
let s:sessions = {}
let s:saving_for_request = 0
" buffer number -> id of a write to check once the write command is over
let s:settle = {}

function! s:Attach(buf) abort
  let buf = str2nr(a:buf)
  if has_key(s:sessions, buf) || getbufvar(buf, '&buftype') !=# '' | return | endif
  let path = fnamemodify(bufname(buf), ':p')
  if path ==# '' || path =~# '^\a\+://' || isdirectory(path) | return | endif
  if !executable(g:ubiquity_command) | return | endif
  let job = job_start([g:ubiquity_command, 'present', '--editor', '--only-synced', path], {
        \ 'mode': 'nl', 'out_cb': function('s:OnLine', [buf]), 'err_io': 'null',
        \ 'exit_cb': function('s:OnExit', [buf]), 'stoponexit': 'term'})
  if job_status(job) !=# 'run' | return | endif
  let s:sessions[buf] = {'job': job, 'path': path, 'synced': 0, 'next': 1, 'answers': {}, 'writing': 0}
endfunction

function! s:Detach(buf) abort
  let buf = str2nr(a:buf)
  if !has_key(s:sessions, buf) | return | endif
  let session = remove(s:sessions, buf)
  if job_status(session.job) ==# 'run'
    call ch_close_in(session.job)
  endif
endfunction

function! s:OnExit(buf, job, status) abort
  let session = get(s:sessions, a:buf, {})
  if !empty(session) && session.job == a:job
    call remove(s:sessions, a:buf)
    call setbufvar(a:buf, 'ubiquity_state', '')
  endif
endfunction

function! s:Send(buf, message) abort
  let session = get(s:sessions, a:buf, {})
  if empty(session) || job_status(session.job) !=# 'run' | return 0 | endif
  call ch_sendraw(session.job, json_encode(a:message) . "\n")
  return 1
endfunction

function! s:OnLine(buf, channel, line) abort
  let session = get(s:sessions, a:buf, {})
  if empty(session) | return | endif
  try
    let message = json_decode(a:line)
  catch
    return
  endtry
  if type(message) != v:t_dict | return | endif
  let event = get(message, 'event', '')
  if event ==# 'ready'
    let session.synced = get(message, 'synced', v:false) ? 1 : 0
    call setbufvar(a:buf, 'ubiquity_synced', session.synced)
    if session.synced | call s:Send(a:buf, {'cmd': 'state'}) | endif
  elseif event ==# 'granted' || event ==# 'failed'
    let session.answers[get(message, 'id', 0)] = message
  elseif event ==# 'state'
    call s:ShowState(a:buf, message)
  elseif event ==# 'didChange'
    call s:RemoteChange(a:buf)
  elseif event ==# 'didMove'
    let session.path = get(message, 'to', session.path)
    echomsg 'Ubiquity: ' . fnamemodify(bufname(a:buf), ':t') . ' was moved to ' . session.path
  elseif event ==# 'savePresentedItemChanges'
    call s:SaveOnRequest(a:buf, get(message, 'id', 0))
  elseif event ==# 'restored'
    echomsg 'Ubiquity: an interrupted save of ' . session.path . ' was undone (' . get(message, 'reason', '') . ')'
  elseif event ==# 'ended' && get(message, 'restoredSkipBackup', v:false)
    echomsg 'Ubiquity: the skip-backup attribute of ' . session.path . ' was put back after the save'
  endif
endfunction

" The status text: uploaded, uploading n %, conflict, excluded, evicted.
function! s:StateText(message) abort
  let sync = get(a:message, 'sync', v:null)
  if sync is v:null | return '' | endif
  if get(a:message, 'excluded', v:false) || sync ==# 'excluded' | return 'excluded' | endif
  if get(a:message, 'conflicts', 0) > 0 | return 'conflict' | endif
  if sync ==# 'in conflict' | return 'conflict' | endif
  if (sync ==# 'uploading' || sync ==# 'downloading') && has_key(a:message, 'progress')
    return sync . ' ' . a:message.progress . ' %'
  endif
  return sync
endfunction

function! s:ShowState(buf, message) abort
  let text = s:StateText(a:message)
  let before = getbufvar(a:buf, 'ubiquity_state', '')
  let conflicts = get(a:message, 'conflicts', 0)
  call setbufvar(a:buf, 'ubiquity_state', text)
  call setbufvar(a:buf, 'ubiquity_conflicts', conflicts)
  " a save by rename drops the skip-backup attribute: save excluded files in place
  call setbufvar(a:buf, '&backupcopy', text ==# 'excluded' ? 'yes' : '')
  if text ==# 'conflict' && before !=# 'conflict'
    echohl WarningMsg
    echomsg 'Ubiquity: ' . fnamemodify(bufname(a:buf), ':t') . ' has ' . conflicts . ' conflict version(s): :UbiquityVersions to see them, :UbiquityResolve to settle'
    echohl None
  endif
  if text !=# before
    redrawstatus!
    call s:Fire('UbiquityState', a:buf)
  endif
endfunction

function! s:Fire(event, buf) abort
  if exists('#User#' . a:event)
    let g:ubiquity_event_buffer = a:buf
    execute 'doautocmd <nomodeline> User ' . a:event
  endif
endfunction

function! s:RemoteChange(buf) abort
  let session = get(s:sessions, a:buf, {})
  if empty(session) || !filereadable(session.path) | return | endif
  if getbufvar(a:buf, '&modified')
    call setbufvar(a:buf, 'ubiquity_changed_remotely', 1)
    echohl WarningMsg
    echomsg 'Ubiquity: ' . fnamemodify(session.path, ':t') . ' changed on another device and has unsaved changes here: :UbiquityDiff to compare, :edit! to take the other version, :write to keep yours'
    echohl None
    redrawstatus!
    call s:Fire('UbiquityChangedRemotely', a:buf)
    return
  endif
  call setbufvar(a:buf, 'ubiquity_changed_remotely', 0)
  let window = bufwinid(a:buf)
  if window != -1
    call win_execute(window, 'let s:view = winsaveview() | silent! edit | call winrestview(s:view)')
  else
    call setbufvar(a:buf, '&autoread', 1)
    execute 'silent! checktime ' . a:buf
  endif
  call s:Fire('UbiquityReloaded', a:buf)
  redraw
endfunction

" Another program's coordinated access asks for unsaved changes first: save, then answer.
function! s:SaveOnRequest(buf, id) abort
  let error = ''
  if getbufvar(a:buf, '&modified')
    let window = bufwinid(a:buf)
    if window == -1
      let error = 'the buffer is not in a window; not saved'
    else
      let s:saving_for_request = 1
      try
        call win_execute(window, 'silent write')
      catch
        let error = v:exception
      finally
        let s:saving_for_request = 0
      endtry
    endif
  endif
  call s:Send(a:buf, error ==# '' ? {'ack': a:id} : {'ack': a:id, 'error': error})
endfunction

" BufWritePre: take a coordinated write (other presenters save first), wait for it.
function! s:BeforeWrite(buf) abort
  let session = get(s:sessions, a:buf, {})
  if empty(session) || !session.synced || s:saving_for_request | return | endif
  if expand('<afile>:p') !=# session.path | return | endif
  let id = session.next
  let session.next += 1
  if !s:Send(a:buf, {'cmd': 'begin-write', 'id': id, 'timeout': g:ubiquity_save_timeout}) | return | endif
  let waited = 0
  while !has_key(session.answers, id) && waited < (g:ubiquity_save_timeout + 2) * 1000
    sleep 2m
    let waited += 2
  endwhile
  let answer = has_key(session.answers, id) ? remove(session.answers, id) : {'event': 'failed', 'error': 'no answer'}
  if answer.event !=# 'granted'
    echohl WarningMsg
    echomsg 'Ubiquity: saving without coordination (' . get(answer, 'error', '') . ')'
    echohl None
    return
  endif
  if get(answer, 'excluded', v:false)
    call setbufvar(a:buf, '&backupcopy', 'yes')
  endif
  let session.writing = id
  " once the write command is over (SafeState: not during a prompt or a :sleep inside it), a
  " write without BufWritePost failed
  let s:settle[a:buf] = id
  if !exists('##SafeState')
    call timer_start(0, {-> s:WriteSettled(a:buf, id)})
  endif
endfunction

function! s:AfterWrite(buf) abort
  let session = get(s:sessions, a:buf, {})
  if empty(session) || session.writing == 0 | return | endif
  " vim runs BufWritePost after some failed writes too (E212): the buffer is still modified then
  if getbufvar(a:buf, '&modified')
    call s:Send(a:buf, {'cmd': 'abort-write', 'id': session.writing, 'reason': 'the save failed'})
  else
    call s:Send(a:buf, {'cmd': 'end-write', 'id': session.writing})
  endif
  let session.writing = 0
endfunction

function! s:SettleWrites() abort
  if empty(s:settle) | return | endif
  let pending = s:settle
  let s:settle = {}
  for [buf, id] in items(pending)
    call s:WriteSettled(str2nr(buf), id)
  endfor
endfunction

function! s:WriteSettled(buf, id) abort
  let session = get(s:sessions, a:buf, {})
  if empty(session) || session.writing != a:id | return | endif
  call s:Send(a:buf, {'cmd': 'abort-write', 'id': a:id, 'reason': 'the save failed'})
  let session.writing = 0
endfunction

" BufReadPre, FileReadPre: an evicted file (nothing at its name, its hidden stub .NAME.icloud
" beside it) is downloaded before vim reads it, so the buffer holds the content instead of
" a new, empty file. Only a missing file with a stub asks `ubiq download --only-evicted`.
function! s:DownloadBeforeRead(file) abort
  let path = fnamemodify(a:file, ':p')
  if path ==# '' || path =~# '^\a\+://' || getftype(path) !=# '' | return | endif
  if !filereadable(fnamemodify(path, ':h') . '/.' . fnamemodify(path, ':t') . '.icloud') | return | endif
  if !executable(g:ubiquity_command) | return | endif
  echo 'Ubiquity: downloading ' . fnamemodify(path, ':t') . ' (evicted)…'
  redraw
  let [status, output] = s:Run(['download', '--only-evicted', path])
  if status != 0
    echohl WarningMsg
    echomsg 'Ubiquity: ' . fnamemodify(path, ':t') . ' is evicted and could not be downloaded (' . trim(output) . '); the buffer is empty'
    echohl None
  else
    echo ''
  endif
endfunction

" BufNewFile: vim reads no file that is not there, so an evicted file is downloaded here and
" read into the new buffer, as if it had been there when it was opened.
function! s:DownloadNewFile(file) abort
  let path = fnamemodify(a:file, ':p')
  call s:DownloadBeforeRead(path)
  if getftype(path) !=# 'file' | return | endif
  silent execute 'keepalt read ++edit ' . fnameescape(path)
  silent 1delete _
  setlocal nomodified
endfunction

" The status line part: '' outside synced folders.
function! UbiquityStatus() abort
  let text = get(b:, 'ubiquity_state', '')
  if text ==# '' | return '' | endif
  " a remote change not taken yet (the buffer has unsaved changes) stays visible here
  return ' [ubiq: ' . text . (get(b:, 'ubiquity_changed_remotely', 0) ? ', changed remotely: :UbiquityDiff' : '') . ']'
endfunction

function! s:Run(arguments) abort
  let command = join(map([g:ubiquity_command] + a:arguments, 'shellescape(v:val)'), ' ')
  let output = system(command)
  return [v:shell_error, output]
endfunction

function! s:Versions() abort
  let path = expand('%:p')
  let [status, output] = s:Run(['versions', path, '--json'])
  if status != 0
    echohl ErrorMsg | echomsg 'Ubiquity: ' . trim(output) | echohl None
    return
  endif
  let listing = json_decode(output)
  let lines = ['" versions of ' . path . ' (Enter: open; :UbiquityResolve ID keeps one)']
  for version in get(listing, 'versions', [])
    call add(lines, printf('%s  %s  %s  %s  %s', version.id, version.conflict ? 'conflict' : 'version ',
          \ get(version, 'modified', ''), get(version, 'device', ''), version.url))
  endfor
  let file = bufnr('%')
  new
  setlocal buftype=nofile bufhidden=wipe noswapfile
  call setline(1, lines)
  setlocal nomodifiable
  let b:ubiquity_versions_of = file
  nnoremap <buffer> <silent> <CR> :call <SID>OpenVersion()<CR>
endfunction

function! s:OpenVersion() abort
  let fields = split(getline('.'), '  ')
  if len(fields) < 5 || getline('.') =~# '^"' | return | endif
  let file = b:ubiquity_versions_of
  execute 'vertical new ' . fnameescape(fields[-1])
  setlocal readonly nomodifiable
  let b:ubiquity_versions_of = file
endfunction

function! s:Resolve(...) abort
  let keep = a:0 > 0 && a:1 !=# '' ? a:1 : 'current'
  " from the versions list or an opened version: the file they belong to
  let buf = exists('b:ubiquity_versions_of') ? b:ubiquity_versions_of : bufnr('%')
  let path = fnamemodify(bufname(buf), ':p')
  let [status, output] = s:Run(['resolve', path, '--keep', keep])
  if status != 0
    echohl ErrorMsg | echomsg 'Ubiquity: ' . trim(output) | echohl None
    return
  endif
  echomsg 'Ubiquity: conflicts of ' . fnamemodify(path, ':t') . ' resolved (kept ' . keep . ')'
  call s:Send(buf, {'cmd': 'state'})
endfunction

function! s:Diff() abort
  let filetype = &filetype
  vertical new
  setlocal buftype=nofile bufhidden=wipe noswapfile
  execute 'read ++edit #'
  0delete _
  let &l:filetype = filetype
  diffthis
  wincmd p
  diffthis
endfunction

function! s:Status() abort
  let text = get(b:, 'ubiquity_state', '')
  echo text ==# '' ? 'Ubiquity: not in a synced folder' : 'Ubiquity: ' . text
endfunction

command! -bar UbiquityStatus call s:Status()
command! -bar UbiquityVersions call s:Versions()
command! -bar -nargs=? UbiquityResolve call s:Resolve(<q-args>)
command! -bar UbiquityDiff call s:Diff()

augroup ubiquity
  autocmd!
  autocmd BufReadPre,FileReadPre * call s:DownloadBeforeRead(expand('<afile>'))
  autocmd BufNewFile * call s:DownloadNewFile(expand('<afile>'))
  autocmd BufReadPost,BufNewFile * call s:Attach(expand('<abuf>'))
  autocmd BufWritePre * call s:BeforeWrite(str2nr(expand('<abuf>')))
  autocmd BufWritePost * call s:AfterWrite(str2nr(expand('<abuf>')))
  autocmd BufDelete * call s:Detach(expand('<abuf>'))
  autocmd BufReadPost,BufWritePost * call setbufvar(str2nr(expand('<abuf>')), 'ubiquity_changed_remotely', 0)
  if exists('##SafeState')
    autocmd SafeState * call s:SettleWrites()
  endif
augroup END

if g:ubiquity_statusline && &statusline ==# ''
  set statusline=%<%f\ %h%m%r%{UbiquityStatus()}%=%-14.(%l,%c%V%)\ %P
endif
