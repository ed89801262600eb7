" indent/ctx.vim — ctx indentation (the rule is in autoload/ctx.vim).
if exists('b:did_indent')
  finish
endif
let b:did_indent = 1

setlocal indentexpr=ctx#Indent(v:lnum)
setlocal indentkeys=0{,0},0),0],!^F,o,O,e
setlocal nolisp nocindent nosmartindent autoindent

let b:undo_indent = 'setlocal indentexpr< indentkeys< lisp< cindent< smartindent< autoindent<'
