" autoload/ctx.vim — indentation for ctx (.ctx models, .sched schedules).
"
" Rule (the same in editors/emacs/ctx-mode.el):
"   * a line is indented shiftwidth() per bracket ( [ { left open before it,
"     minus one level per closing bracket it starts with (so `}` dedents);
"   * a continuation line -- one starting with an infix operator, which the
"     lexer joins to the line before -- after a bracket-balanced line lines up
"     with that line's `=` (`let c  = a` / `       + b`), or with the line
"     before when that is a continuation line too, else one level deeper.
" Brackets inside strings and comments do not count.

let s:cpo_save = &cpo
set cpo&vim

" [leading closers, net brackets, byte index of a top-level '=' or -1]
function! ctx#Scan(line) abort
  let lead = 0
  let first = match(a:line, '\S')
  if first < 0
    return [0, 0, -1]
  endif
  while first + lead < strlen(a:line) && stridx(')]}', a:line[first + lead]) >= 0
    let lead += 1
  endwhile
  let net = 0
  let level = 0
  let eq = -1
  let instr = 0
  let n = strlen(a:line)
  let j = first
  while j < n
    let c = a:line[j]
    if instr
      if c ==# '\'
        let j += 1
      elseif c ==# '"'
        let instr = 0
      endif
    elseif c ==# '"'
      let instr = 1
    elseif c ==# '#' || (c ==# '/' && a:line[j + 1] ==# '/')
      break
    elseif stridx('([{', c) >= 0
      let net += 1
      let level += 1
    elseif stridx(')]}', c) >= 0
      let net -= 1
      let level -= 1
    elseif c ==# '=' && level == 0 && eq < 0 && j > 0
          \ && stridx('=!<>', a:line[j - 1]) < 0 && a:line[j + 1] !=# '='
      let eq = j
    endif
    let j += 1
  endwhile
  return [lead, net, eq]
endfunction

function! ctx#IsContinuation(line) abort
  return a:line =~# '^\s*[-+*/@.=!<>&|]' && a:line !~# '^\s*//'
endfunction

function! s:IsCode(line) abort
  return a:line =~# '\S' && a:line !~# '^\s*\%(#\|//\)'
endfunction

" The nearest line at or above lnum with code on it (0 if none).
function! s:PrevCode(lnum) abort
  let l = a:lnum
  while l > 0 && !s:IsCode(getline(l))
    let l -= 1
  endwhile
  return l
endfunction

function! ctx#Indent(...) abort
  let lnum = a:0 ? a:1 : v:lnum
  let sw = shiftwidth()
  let cur = getline(lnum)
  let lead = ctx#Scan(cur)[0]
  let q = s:PrevCode(lnum - 1)
  if q == 0
    return 0
  endif
  " Anchor: the nearest code line above that is not a continuation line; its
  " indentation tells its bracket depth.
  let a = q
  while a > 0 && ctx#IsContinuation(getline(a))
    let a = s:PrevCode(a - 1)
  endwhile
  if a == 0
    let depth = 0
    let from = 1
  else
    let depth = indent(a) / sw + ctx#Scan(getline(a))[0]
    let from = a
  endif
  let l = from
  while l < lnum
    let depth += ctx#Scan(getline(l))[1]
    let l += 1
  endwhile
  let base = sw * max([0, depth - lead])
  if ctx#IsContinuation(cur)
    let qline = getline(q)
    let [qlead, qnet, qeq] = ctx#Scan(qline)
    if qnet == 0
      if ctx#IsContinuation(qline)
        return indent(q)
      elseif qeq >= 0
        return strdisplaywidth(strpart(qline, 0, qeq))
      endif
      return base + sw
    endif
  endif
  return base
endfunction

let &cpo = s:cpo_save
unlet s:cpo_save
