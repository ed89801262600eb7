" vim_check.vim — headless check of editors/vim (run by editors/tests/run.py vim):
"   vim -Nu NONE -i NONE -es -c "let g:ctx_vimdir=..." -c "let g:ctx_expect=..."
"       -c "let g:ctx_log=..." -S vim_check.vim
" For every example model and fixture: the syntax group (synIDattr(synID()))
" of every token the reference tokenizer (ctxlex.py) classified, the filetype
" and ftplugin options, and the indent rule (strip all indentation, `gg=G`,
" compare with the file). Writes its report to g:ctx_log; exits with :cquit on
" any failure.

let s:failures = []
let s:checks = 0
let s:report = []

function! s:Fail(msg) abort
  call add(s:failures, a:msg)
endfunction

function! s:Group(lnum, bcol) abort
  return synIDattr(synID(a:lnum, a:bcol + 1, 1), 'name')
endfunction

" Groups that mark words of the table: a plain identifier gets none of them.
let s:class_groups = {}

function! s:ClassGroup(cls) abort
  return 'ctx' . toupper(a:cls[0]) . tolower(a:cls[1:])
endfunction

function! s:Want(e) abort
  let k = a:e.kind
  if k ==# 'word'
    return [s:ClassGroup(a:e.class)]
  elseif k ==# 'declname'
    return [a:e.decl ==# 'schedule' ? 'ctxSchedName' : 'ctxDeclName']
  elseif k ==# 'funcname'
    return ['ctxFuncName']
  elseif k ==# 'target'
    return ['ctxSchedTarget']
  elseif k ==# 'label'
    return ['ctxSchedLabel']
  elseif k ==# 'comment'
    return ['ctxComment', 'ctxTodo']
  elseif k ==# 'number'
    return ['ctxNumber']
  elseif k ==# 'string'
    return ['ctxString', 'ctxEscape']
  elseif k ==# 'op'
    return ['ctxOperator']
  elseif k ==# 'punct'
    return ['ctxDelimiter']
  elseif k ==# 'ident'
    return ['', 'ctxSchedBody']
  endif
  return []
endfunction

function! s:CheckTokens(f) abort
  for e in a:f.tokens
    let want = s:Want(e)
    if empty(want)
      continue
    endif
    let s:checks += 1
    for bcol in [e.bcol, e.lastbcol]
      let got = s:Group(e.line, bcol)
      if index(want, got) < 0
        call s:Fail(printf("%s:%d:%d: '%s' (%s%s): want %s, got %s", a:f.name, e.line,
              \ bcol + 1, e.text, e.kind, has_key(e, 'class') ? ' ' . e.class : '',
              \ join(map(copy(want), 'string(v:val)'), '|'), string(got)))
        break
      endif
    endfor
  endfor
endfunction

function! s:CheckOptions(f) abort
  let opts = {'&filetype': 'ctx', '&commentstring': '# %s', '&shiftwidth': 2,
        \ '&expandtab': 1, '&indentexpr': 'ctx#Indent(v:lnum)'}
  for [name, want] in items(opts)
    let s:checks += 1
    if eval(name) !=# want
      call s:Fail(printf('%s: %s is %s, want %s', a:f.name, name, string(eval(name)),
            \ string(want)))
    endif
  endfor
endfunction

" Strip every line's indentation, re-indent the whole buffer, compare. For
" examples/ the hand-aligned continuation lines are left out of the comparison.
function! s:CheckIndent(f) abort
  let orig = getline(1, '$')
  silent! %s/^\s\+//e
  silent normal! gg=G
  let got = getline(1, '$')
  let skip = a:f.name =~# '^examples/' ? a:f.continuation_lines : []
  for i in range(len(orig))
    if index(skip, i + 1) >= 0
      continue
    endif
    let s:checks += 1
    if got[i] !=# orig[i]
      call s:Fail(printf("%s:%d: re-indented to %d, file has %d: %s", a:f.name, i + 1,
            \ indent(i + 1), len(matchstr(orig[i], '^\s*')), orig[i]))
    endif
  endfor
  silent! undo 0
endfunction

function! s:Main() abort
  let &runtimepath = g:ctx_vimdir . ',' . &runtimepath
  filetype plugin indent on
  syntax on
  let exp = json_decode(join(readfile(g:ctx_expect), "\n"))
  for f in exp.files
    let c0 = s:checks
    let f0 = len(s:failures)
    execute 'silent edit! ' . fnameescape(f.path)
    if &filetype !=# 'ctx'
      call s:Fail(printf('%s: filetype is "%s", want ctx (ftdetect)', f.name, &filetype))
      continue
    endif
    call s:CheckOptions(f)
    call s:CheckTokens(f)
    call s:CheckIndent(f)
    call add(s:report, printf('%s: %d checks, %d failed', f.name, s:checks - c0,
          \ len(s:failures) - f0))
    silent bwipeout!
  endfor
endfunction

try
  call s:Main()
catch
  call s:Fail('vim error: ' . v:exception . ' at ' . v:throwpoint)
endtry
for s:m in s:failures[:59]
  call add(s:report, 'FAIL ' . s:m)
endfor
if len(s:failures) > 60
  call add(s:report, printf('... and %d more', len(s:failures) - 60))
endif
call add(s:report, printf('vim syntax+indent: %d passed, %d failed',
      \ s:checks - len(s:failures), len(s:failures)))
call writefile(s:report, g:ctx_log)
if empty(s:failures)
  qall!
else
  cquit
endif
