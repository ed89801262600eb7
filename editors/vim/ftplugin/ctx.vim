" ftplugin/ctx.vim — ctx models (.ctx) and schedules (.sched).
if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1

setlocal commentstring=#\ %s
setlocal comments=:#,://
setlocal formatoptions-=t formatoptions+=croql
setlocal shiftwidth=2 softtabstop=2 expandtab
" Indentation: 2 spaces per open bracket, `}` dedents (autoload/ctx.vim), also
" without `filetype indent on`.
setlocal indentexpr=ctx#Indent(v:lnum)
setlocal indentkeys=0{,0},0),0],!^F,o,O,e
setlocal nolisp nocindent nosmartindent autoindent
setlocal suffixesadd=.ctx,.sched

let b:undo_ftplugin = 'setlocal commentstring< comments< formatoptions< shiftwidth<'
      \ . ' softtabstop< expandtab< indentexpr< indentkeys< lisp< cindent<'
      \ . ' smartindent< autoindent< suffixesadd<'
