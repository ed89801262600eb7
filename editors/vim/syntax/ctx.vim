" Vim syntax file
" Language:   ctx (recursive deep-learning models: .ctx models, .sched schedules)
" Maintainer: the ctx project (editors/vim)
"
" The `syn keyword ctx<Class>` lines hold exactly the words of class <Class>
" (DECL -> ctxDecl, TYPEARG -> ctxTypearg, ...) of grammar/keywords.def;
" editors/tests/check_keywords.py fails when they drift apart.

if exists('b:current_syntax')
  finish
endif
let s:cpo_save = &cpo
set cpo&vim

syn iskeyword @,48-57,_
syn case match

" ---- comments, strings, numbers, operators ----------------------------------
syn keyword ctxTodo contained TODO FIXME XXX NOTE
syn match   ctxOperator  "->\|==\|!=\|<=\|>=\|&&\|||\|[-+*/@=<>!]"
syn match   ctxDelimiter "[:,;.]"
syn match   ctxNumber    "\%(\<\d\+\%(\.\d*\)\=\|\.\d\+\)\%([eE][-+]\=\d\+\)\="
syn match   ctxEscape    contained "\\."
syn region  ctxString    start=+"+ skip=+\\.+ end=+"+ end=+$+ oneline contains=ctxEscape
syn match   ctxComment   "#.*$"  contains=ctxTodo,@Spell
syn match   ctxComment   "//.*$" contains=ctxTodo,@Spell

" ---- words of grammar/keywords.def -------------------------------------------
" DECL: the names they declare are highlighted through nextgroup.
syn keyword ctxDecl model dim input param nextgroup=ctxDeclName skipwhite
syn keyword ctxDecl rec def nextgroup=ctxFuncName skipwhite
syn keyword ctxDecl schedule nextgroup=ctxSchedName skipwhite skipnl
syn keyword ctxDecl output use
" CONTROL
syn keyword ctxControl let if else return for in
" TYPE
syn keyword ctxType f32 i32 tree dag sequence
" REDUCE
syn keyword ctxReduce sum max
" ACCESSOR
syn keyword ctxAccessor leaf root child children num_children pred preds num_preds prev
" BUILTIN
syn keyword ctxBuiltin sigmoid tanh relu exp log sqrt abs concat
" TYPEARG
syn keyword ctxTypearg max_children max_preds
" DIRECTIVE: only inside a schedule body (contextual words elsewhere)
syn keyword ctxDirective contained dynamic_batch specialize fuse hoist dense split tile
syn keyword ctxDirective contained reorder vectorize unroll unroll_recursion refactor_recursion balance_levels parallel
syn keyword ctxDirective contained persist cache bind
syn keyword ctxDirective contained hoist_invariant hoist_products hoist_local all_deps
syn keyword ctxDirective contained share_weights direct_results leaf_views
" SCHEDARG: only inside a schedule body
syn keyword ctxSchedarg contained by to shared registers block thread warp grid

" ---- declarations -------------------------------------------------------------
syn match ctxDeclName  contained "\h\w*"
syn match ctxFuncName  contained "\h\w*"
" schedule NAME [for TARGET] { [OPNAME:] VERB args ... }
syn match  ctxSchedName   contained "\h\w*" nextgroup=ctxSchedFor,ctxSchedBody skipwhite skipnl
" the `for` slot: its keyword is highlighted as ctxControl
syn match  ctxSchedFor    contained "\<\h\w*\>" contains=ctxControl nextgroup=ctxSchedTarget skipwhite skipnl
syn match  ctxSchedTarget contained "\<\h\w*" nextgroup=ctxSchedBody skipwhite skipnl
syn match  ctxSchedLabel  contained "\<\h\w*\ze\s*:"
syn cluster ctxSchedItems contains=ctxComment,ctxString,ctxNumber,ctxOperator,ctxDelimiter,ctxDirective,ctxSchedarg,ctxSchedLabel,ctxControl,ctxType,ctxReduce,ctxAccessor,ctxBuiltin,ctxTypearg
syn region ctxSchedBody   contained matchgroup=ctxBrace start="{" end="}" contains=@ctxSchedItems fold

" ---- links ----------------------------------------------------------------------
hi def link ctxComment     Comment
hi def link ctxTodo        Todo
hi def link ctxString      String
hi def link ctxEscape      SpecialChar
hi def link ctxNumber      Number
hi def link ctxOperator    Operator
hi def link ctxDelimiter   Delimiter
hi def link ctxBrace       Delimiter
hi def link ctxDecl        Keyword
hi def link ctxControl     Statement
hi def link ctxType        Type
hi def link ctxReduce      Keyword
hi def link ctxAccessor    Function
hi def link ctxBuiltin     Function
hi def link ctxTypearg     Identifier
hi def link ctxDirective   PreProc
hi def link ctxSchedarg    Special
hi def link ctxDeclName    Identifier
hi def link ctxFuncName    Function
hi def link ctxSchedName   Identifier
hi def link ctxSchedTarget Constant
hi def link ctxSchedLabel  Label

let b:current_syntax = 'ctx'
let &cpo = s:cpo_save
unlet s:cpo_save
