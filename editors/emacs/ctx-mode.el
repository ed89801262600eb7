;;; ctx-mode.el --- Major mode for ctx models (.ctx) and schedules (.sched)  -*- lexical-binding: t; -*-

;; Keywords: languages
;; Package-Requires: ((emacs "25.1"))

;;; Commentary:

;; Font-lock, comments, indentation for the ctx language: recursive
;; deep-learning models (`model', `dim', `input', `param', `rec', ...) and
;; their schedules (`schedule NAME for TARGET { DIRECTIVES }').
;;
;; Install: (add-to-list 'load-path "/path/to/ctx/editors/emacs")
;;          (require 'ctx-mode)
;;
;; The `ctx-mode-<class>-words' lists hold exactly the words of class <CLASS>
;; in grammar/keywords.def; editors/tests/check_keywords.py fails when they
;; drift apart.

;;; Code:

(require 'cl-lib)

(defgroup ctx nil
  "Major mode for the ctx model language."
  :group 'languages
  :prefix "ctx-mode-")

(defcustom ctx-mode-indent-offset 2
  "Indentation per open bracket in `ctx-mode'."
  :type 'integer
  :safe #'integerp
  :group 'ctx)

;;;; Words of grammar/keywords.def, one list per class.

(defconst ctx-mode-decl-words
  '("model" "dim" "input" "param" "rec" "def" "output" "use" "schedule")
  "DECL words: declarations.")

(defconst ctx-mode-control-words
  '("let" "if" "else" "return" "for" "in")
  "CONTROL words: statements.")

(defconst ctx-mode-type-words
  '("f32" "i32" "tree" "dag" "sequence")
  "TYPE words: element types and structure kinds.")

(defconst ctx-mode-reduce-words
  '("sum" "max")
  "REDUCE words: reductions.")

(defconst ctx-mode-accessor-words
  '("leaf" "root" "child" "children" "num_children" "pred" "preds" "num_preds"
    "prev")
  "ACCESSOR words: structure accessors.")

(defconst ctx-mode-builtin-words
  '("sigmoid" "tanh" "relu" "exp" "log" "sqrt" "abs" "concat")
  "BUILTIN words: elementwise and tensor functions.")

(defconst ctx-mode-typearg-words
  '("max_children" "max_preds")
  "TYPEARG words: named arguments of structure types.")

(defconst ctx-mode-directive-words
  '("dynamic_batch" "specialize" "fuse" "hoist" "dense" "split" "tile" "reorder"
    "vectorize" "unroll" "unroll_recursion" "refactor_recursion" "balance_levels" "parallel" "persist" "cache" "bind"
    "hoist_invariant" "hoist_products" "hoist_local" "all_deps" "share_weights"
    "direct_results" "leaf_views")
  "DIRECTIVE words: schedule verbs (only inside a schedule body).")

(defconst ctx-mode-schedarg-words
  '("by" "to" "shared" "registers" "block" "thread" "warp" "grid")
  "SCHEDARG words: words inside schedule directives (only in a schedule body).")

;;;; Syntax table

(defvar ctx-mode-syntax-table
  (let ((st (make-syntax-table)))
    ;; `#' and `//' start a comment that runs to the end of the line.
    (modify-syntax-entry ?# "<" st)
    (modify-syntax-entry ?/ ". 12" st)
    (modify-syntax-entry ?\n ">" st)
    (modify-syntax-entry ?\" "\"" st)
    (modify-syntax-entry ?\\ "\\" st)
    (modify-syntax-entry ?_ "_" st)
    (modify-syntax-entry ?' "." st)
    (dolist (c '(?+ ?- ?* ?@ ?= ?< ?> ?! ?& ?| ?: ?, ?. ?\; ?%))
      (modify-syntax-entry c "." st))
    (modify-syntax-entry ?\( "()" st)
    (modify-syntax-entry ?\) ")(" st)
    (modify-syntax-entry ?\[ "(]" st)
    (modify-syntax-entry ?\] ")[" st)
    (modify-syntax-entry ?\{ "(}" st)
    (modify-syntax-entry ?\} "){" st)
    st)
  "Syntax table for `ctx-mode'.")

;;;; Font lock

(defconst ctx-mode--ident "[[:alpha:]_][[:alnum:]_]*"
  "An identifier.")

(defun ctx-mode--words-re (words)
  "A regexp matching any of WORDS as a whole symbol."
  (regexp-opt words 'symbols))

(defun ctx-mode--schedule-brace-p (pos)
  "Non-nil when the `{' at POS opens the body of `schedule NAME [for TARGET]'."
  (save-excursion
    (goto-char pos)
    (and (eq (char-after) ?{)
         (progn
           (forward-comment (- (point)))  ; back over blanks and comments
           (save-match-data
             (looking-back
              (concat "\\_<schedule[ \t\n]+" ctx-mode--ident
                      "\\(?:[ \t\n]+for[ \t\n]+" ctx-mode--ident "\\)?")
              (max (point-min) (- (point) 400))))))))

(defun ctx-mode--in-schedule-body-p (&optional pos)
  "Non-nil when POS (default point) is code inside a schedule body."
  (let ((ppss (save-excursion (syntax-ppss (or pos (point))))))
    (and (not (nth 8 ppss))
         (cl-some #'ctx-mode--schedule-brace-p (nth 9 ppss)))))

(defun ctx-mode--schedule-matcher (regexp)
  "A font-lock matcher for REGEXP that only matches inside schedule bodies."
  (lambda (limit)
    (let (found)
      (while (and (not found) (re-search-forward regexp limit t))
        (when (ctx-mode--in-schedule-body-p (match-beginning 0))
          (setq found t)))
      found)))

(defconst ctx-mode--number-re
  (concat "\\(?:\\_<[0-9]+\\(?:\\.[0-9]*\\)?\\|\\.[0-9]+\\)"
          "\\(?:[eE][-+]?[0-9]+\\)?")
  "Numbers: 123, 1.5, .5, 1e-3, 2.5E+3.")

(defvar ctx-mode-font-lock-keywords
  `(;; Declared names first: they win over the words below.
    (,(concat "\\_<\\(rec\\|def\\)[ \t]+\\(" ctx-mode--ident "\\)")
     (2 font-lock-function-name-face))
    (,(concat "\\_<\\(model\\|schedule\\)[ \t]+\\(" ctx-mode--ident "\\)")
     (2 font-lock-type-face))
    (,(concat "\\_<dim[ \t]+\\(" ctx-mode--ident "\\)")
     (1 font-lock-constant-face))
    (,(concat "\\_<\\(input\\|param\\)[ \t]+\\(" ctx-mode--ident "\\)")
     (2 font-lock-variable-name-face))
    ;; schedule NAME for TARGET
    (,(concat "\\_<schedule[ \t]+" ctx-mode--ident
              "[ \t]+for[ \t]+\\(" ctx-mode--ident "\\)")
     (1 font-lock-constant-face))
    ;; Words of the table.
    (,(ctx-mode--words-re ctx-mode-decl-words) . font-lock-keyword-face)
    (,(ctx-mode--words-re ctx-mode-control-words) . font-lock-keyword-face)
    (,(ctx-mode--words-re ctx-mode-type-words) . font-lock-type-face)
    (,(ctx-mode--words-re ctx-mode-reduce-words) . font-lock-keyword-face)
    (,(ctx-mode--words-re ctx-mode-accessor-words) . font-lock-builtin-face)
    (,(ctx-mode--words-re ctx-mode-builtin-words) . font-lock-builtin-face)
    (,(ctx-mode--words-re ctx-mode-typearg-words) . font-lock-constant-face)
    (,(ctx-mode--schedule-matcher (ctx-mode--words-re ctx-mode-directive-words))
     (0 font-lock-preprocessor-face))
    (,(ctx-mode--schedule-matcher (ctx-mode--words-re ctx-mode-schedarg-words))
     (0 font-lock-constant-face))
    ;; OPNAME: in front of a directive
    (,(ctx-mode--schedule-matcher
       (concat "\\_<\\(" ctx-mode--ident "\\)[ \t]*:"))
     (1 font-lock-variable-name-face))
    (,ctx-mode--number-re . font-lock-constant-face))
  "Font-lock keywords for `ctx-mode'.")

;;;; Indentation

(defconst ctx-mode--continuation-re "[ \t]*\\(?:[-+*@.=!<>&|]\\|/[^/]\\|/$\\)"
  "A line starting with an infix operator continues the line before.")

(defun ctx-mode--continuation-line-p ()
  "Non-nil when the current line starts with an infix operator."
  (save-excursion
    (beginning-of-line)
    (looking-at ctx-mode--continuation-re)))

(defun ctx-mode--code-line-p ()
  "Non-nil when the current line holds code (not blank, not only a comment)."
  (save-excursion
    (back-to-indentation)
    (not (or (eolp) (looking-at "#\\|//")))))

(defun ctx-mode--previous-code-line ()
  "Move to the previous code line; nil when there is none."
  (let (found)
    (while (and (not found) (zerop (forward-line -1)))
      (when (ctx-mode--code-line-p) (setq found t)))
    found))

(defun ctx-mode--line-equals-column ()
  "Column of the first top-level `=' (not `==' `!=' `<=' `>=') on this line."
  (save-excursion
    (back-to-indentation)
    (let ((depth (car (syntax-ppss)))
          (eol (line-end-position))
          col)
      (while (and (not col) (re-search-forward "=" eol t))
        (let ((p (match-beginning 0))
              (ppss (save-excursion (syntax-ppss (match-beginning 0)))))
          (unless (or (nth 8 ppss)
                      (/= (car ppss) depth)
                      (memq (char-before p) '(?= ?! ?< ?>))
                      (eq (char-after (1+ p)) ?=))
            (setq col (save-excursion (goto-char p) (current-column))))))
      col)))

(defun ctx-mode-calculate-indentation ()
  "The column the current line should be indented to.
`ctx-mode-indent-offset' per bracket left open before the line, one less per
closing bracket it starts with; a line starting with an infix operator after a
balanced line lines up with that line's `=' (or with the line before, when
that is a continuation line too), else goes one level deeper."
  (save-excursion
    (back-to-indentation)
    (let* ((ppss (syntax-ppss))
           (depth (car ppss))
           (closers (save-excursion
                      (let ((n 0))
                        (while (memq (char-after) '(?\) ?\] ?\}))
                          (setq n (1+ n))
                          (forward-char))
                        n)))
           (base (* ctx-mode-indent-offset (max 0 (- depth closers)))))
      (if (and (ctx-mode--continuation-line-p)
               (save-excursion
                 (and (ctx-mode--previous-code-line)
                      (progn (back-to-indentation)
                             (= (car (syntax-ppss)) depth)))))
          (save-excursion
            (ctx-mode--previous-code-line)
            (cond ((ctx-mode--continuation-line-p) (current-indentation))
                  ((ctx-mode--line-equals-column))
                  (t (+ base ctx-mode-indent-offset))))
        base))))

(defun ctx-mode-indent-line ()
  "Indent the current line as ctx code."
  (interactive)
  (let ((col (if (nth 3 (save-excursion (syntax-ppss (line-beginning-position))))
                 nil                    ; inside a string: leave it
               (ctx-mode-calculate-indentation)))
        (offset (- (current-column) (current-indentation))))
    (when col
      (indent-line-to col)
      (when (> offset 0) (forward-char offset)))))

;;;; Mode

(defvar ctx-mode-imenu-generic-expression
  `(("Functions" ,(concat "^\\s-*\\_<\\(?:rec\\|def\\)\\s-+\\(" ctx-mode--ident "\\)") 1)
    ("Schedules" ,(concat "^\\s-*\\_<schedule\\s-+\\(" ctx-mode--ident "\\)") 1)
    ("Models" ,(concat "^\\s-*\\_<model\\s-+\\(" ctx-mode--ident "\\)") 1))
  "Imenu entries for `ctx-mode'.")

;;;###autoload
(define-derived-mode ctx-mode prog-mode "ctx"
  "Major mode for ctx models (.ctx) and schedules (.sched).

\\{ctx-mode-map}"
  :syntax-table ctx-mode-syntax-table
  :group 'ctx
  (setq-local comment-start "# ")
  (setq-local comment-end "")
  (setq-local comment-start-skip "\\(?:#+\\|//+\\)[ \t]*")
  (setq-local comment-use-syntax t)
  (setq-local font-lock-defaults '(ctx-mode-font-lock-keywords))
  (setq-local indent-line-function #'ctx-mode-indent-line)
  (setq-local indent-tabs-mode nil)
  (setq-local tab-width 8)
  (setq-local electric-indent-chars
              (append '(?\} ?\) ?\]) electric-indent-chars))
  (setq-local imenu-generic-expression ctx-mode-imenu-generic-expression))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.ctx\\'" . ctx-mode))
;;;###autoload
(add-to-list 'auto-mode-alist '("\\.sched\\'" . ctx-mode))

(provide 'ctx-mode)

;;; ctx-mode.el ends here
