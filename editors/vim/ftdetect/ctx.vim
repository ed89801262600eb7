" ftdetect/ctx.vim — ctx models (.ctx) and schedules (.sched).
autocmd BufRead,BufNewFile *.ctx,*.sched setfiletype ctx
