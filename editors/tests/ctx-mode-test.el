;;; ctx-mode-test.el --- ERT tests for editors/emacs/ctx-mode.el  -*- lexical-binding: t; -*-

;; Run by editors/tests/run.py emacs:
;;   CTX_EXPECT=expectations.json emacs -Q --batch -L editors/emacs \
;;     -l editors/tests/ctx-mode-test.el -f ert-run-tests-batch-and-exit
;; The expectations (written by editors/tests/ctxlex.py) classify every token
;; of every example model and fixture; these tests check the face font-lock
;; gives each of them, and re-indent every file.

;;; Code:

(require 'ert)
(require 'json)
(require 'cl-lib)
(require 'ctx-mode)

(defvar ctx-test--expect
  (let ((file (getenv "CTX_EXPECT")))
    (unless (and file (file-readable-p file))
      (error "CTX_EXPECT must name the expectations JSON (see editors/tests/run.py)"))
    (let ((json-object-type 'alist)
          (json-array-type 'list)
          (json-key-type 'symbol))
      (json-read-file file)))
  "The expectations JSON as an alist.")

(defun ctx-test--get (obj key) (cdr (assq key obj)))

;; The face each class of grammar/keywords.def must get. A class added to the
;; table without an entry here fails `ctx-mode-test-classes-mapped'.
(defconst ctx-test--class-faces
  '(("DECL" . font-lock-keyword-face)
    ("CONTROL" . font-lock-keyword-face)
    ("TYPE" . font-lock-type-face)
    ("REDUCE" . font-lock-keyword-face)
    ("ACCESSOR" . font-lock-builtin-face)
    ("BUILTIN" . font-lock-builtin-face)
    ("TYPEARG" . font-lock-constant-face)
    ("DIRECTIVE" . font-lock-preprocessor-face)
    ("SCHEDARG" . font-lock-constant-face)))

(defconst ctx-test--declname-faces
  '(("model" . font-lock-type-face)
    ("schedule" . font-lock-type-face)
    ("dim" . font-lock-constant-face)
    ("input" . font-lock-variable-name-face)
    ("param" . font-lock-variable-name-face)))

(defun ctx-test--faces-at (pos)
  (let ((f (get-text-property pos 'face)))
    (if (listp f) f (list f))))

(defun ctx-test--want (e)
  "The faces token E may have; `none' for no face; nil when not checked."
  (let ((kind (ctx-test--get e 'kind)))
    (pcase kind
      ("word" (let ((f (cdr (assoc (ctx-test--get e 'class) ctx-test--class-faces))))
                (if f (list f) 'unmapped)))
      ("declname" (list (cdr (assoc (ctx-test--get e 'decl) ctx-test--declname-faces))))
      ("funcname" '(font-lock-function-name-face))
      ("target" '(font-lock-constant-face))
      ("label" '(font-lock-variable-name-face))
      ("comment" '(font-lock-comment-face font-lock-comment-delimiter-face))
      ("number" '(font-lock-constant-face))
      ("string" '(font-lock-string-face))
      ((or "ident" "op" "punct" "bracket") 'none)
      (_ nil))))

(defun ctx-test--pos (line col)
  (save-excursion
    (goto-char (point-min))
    (forward-line (1- line))
    (+ (point) col)))

(defun ctx-test--face-ok (want got)
  (cond ((eq want 'unmapped) nil)
        ((eq want 'none) (null (delq nil got)))
        (t (cl-intersection want got))))

(defun ctx-test--check-faces (file)
  "Failures (strings) for the faces of FILE's expected tokens, each checked at
its first and last character."
  (let ((failures '()))
    (with-temp-buffer
      (insert-file-contents (ctx-test--get file 'path))
      (ctx-mode)
      (font-lock-ensure)
      (dolist (e (ctx-test--get file 'tokens))
        (let ((want (ctx-test--want e)))
          (when want
            (let* ((line (ctx-test--get e 'line))
                   (bad (cl-find-if-not
                         (lambda (col)
                           (ctx-test--face-ok
                            want (ctx-test--faces-at (ctx-test--pos line col))))
                         (list (ctx-test--get e 'col) (ctx-test--get e 'lastcol)))))
              (when bad
                (push (format "%s:%d:%d: '%s' (%s%s): want %s, got %S"
                              (ctx-test--get file 'name) line (1+ bad)
                              (ctx-test--get e 'text) (ctx-test--get e 'kind)
                              (let ((c (ctx-test--get e 'class))) (if c (concat " " c) ""))
                              want (ctx-test--faces-at (ctx-test--pos line bad)))
                      failures)))))))
    (nreverse failures)))

(defun ctx-test--report (failures)
  (when failures
    (ert-fail (concat (format "%d failures:\n" (length failures))
                      (mapconcat #'identity (cl-subseq failures 0 (min 60 (length failures)))
                                 "\n")))))

(ert-deftest ctx-mode-test-classes-mapped ()
  "Every class of grammar/keywords.def has a face in this test."
  (dolist (c (ctx-test--get ctx-test--expect 'classes))
    (should (assoc c ctx-test--class-faces))))

(ert-deftest ctx-mode-test-faces-of-every-file ()
  "Every table word, comment, number, string, name of every example and fixture."
  (let ((failures '())
        (n 0))
    (dolist (f (ctx-test--get ctx-test--expect 'files))
      (setq n (+ n (length (ctx-test--get f 'tokens))))
      (setq failures (append failures (ctx-test--check-faces f))))
    (message "ctx-mode faces: %d tokens in %d files, %d failures"
             n (length (ctx-test--get ctx-test--expect 'files)) (length failures))
    (should (> n 0))
    (ctx-test--report failures)))

(defmacro ctx-test--with-buffer (text &rest body)
  (declare (indent 1))
  `(with-temp-buffer
     (insert ,text)
     (ctx-mode)
     (font-lock-ensure)
     (goto-char (point-min))
     ,@body))

(defun ctx-test--face-of (needle &optional nth)
  "Face at the start of the NTH (default 1st) occurrence of NEEDLE."
  (goto-char (point-min))
  (search-forward needle nil nil (or nth 1))
  (get-text-property (match-beginning 0) 'face))

(ert-deftest ctx-mode-test-chosen-faces ()
  "Faces at hand-chosen positions."
  (ctx-test--with-buffer
      (concat "model m  # the model\n"
              "dim H = 2.5E+3\n"
              "rec cell(n: t) -> f32[H] {\n"
              "  if leaf(n) { return sigmoid(x) }   // leaf\n"
              "  let split = sum(k in n.children) cell(n.child[k]) * .5\n"
              "  return tanh(split)\n"
              "}\n"
              "schedule m for cuda {\n"
              "  g: bind node to block, i to thread\n"
              "  split i by 4\n"
              "}\n")
    (should (eq (ctx-test--face-of "model") 'font-lock-keyword-face))
    (should (eq (ctx-test--face-of "m ") 'font-lock-type-face))
    (should (memq (ctx-test--face-of "the model") '(font-lock-comment-face)))
    (should (eq (ctx-test--face-of "2.5E+3") 'font-lock-constant-face))
    (should (eq (ctx-test--face-of "rec") 'font-lock-keyword-face))
    (should (eq (ctx-test--face-of "cell") 'font-lock-function-name-face))
    (should (eq (ctx-test--face-of "f32") 'font-lock-type-face))
    (should (eq (ctx-test--face-of "leaf") 'font-lock-builtin-face))
    (should (eq (ctx-test--face-of "sigmoid") 'font-lock-builtin-face))
    (should (memq (ctx-test--face-of "// leaf")
                  '(font-lock-comment-face font-lock-comment-delimiter-face)))
    (should (eq (ctx-test--face-of "leaf" 2) 'font-lock-comment-face))
    (should (eq (ctx-test--face-of "split") nil)) ; a plain identifier outside schedules
    (should (eq (ctx-test--face-of "sum") 'font-lock-keyword-face))
    (should (eq (ctx-test--face-of "children") 'font-lock-builtin-face))
    (should (eq (ctx-test--face-of ".5") 'font-lock-constant-face))
    (should (eq (ctx-test--face-of "cuda") 'font-lock-constant-face))
    (should (eq (ctx-test--face-of "g:") 'font-lock-variable-name-face))
    (should (eq (ctx-test--face-of "bind") 'font-lock-preprocessor-face))
    (should (eq (ctx-test--face-of "node") nil))
    (should (eq (ctx-test--face-of "to") 'font-lock-constant-face))
    (should (eq (ctx-test--face-of "split i") 'font-lock-preprocessor-face))))

(ert-deftest ctx-mode-test-syntax ()
  "Comment syntax: `#' and `//' start comments, `/' alone does not."
  (ctx-test--with-buffer "let a = b / c  # x\nlet d = e // y\n"
    (should (nth 4 (syntax-ppss (progn (search-forward "# ") (point)))))
    (should (nth 4 (syntax-ppss (progn (search-forward "// ") (point)))))
    (should-not (nth 4 (syntax-ppss (progn (goto-char (point-min))
                                           (search-forward "/ c") (point)))))
    (should (equal comment-start "# "))
    (goto-char (point-min))
    (comment-region (point-min) (line-end-position))
    (should (string-prefix-p "# let a" (buffer-string)))))

(ert-deftest ctx-mode-test-auto-mode ()
  "`.ctx' and `.sched' files open in `ctx-mode'."
  (dolist (name '("x.ctx" "dir/y.cpu.sched"))
    (should (eq (assoc-default name auto-mode-alist #'string-match) 'ctx-mode)))
  (with-temp-buffer
    (ctx-mode)
    (should (derived-mode-p 'prog-mode))
    (should (eq indent-line-function #'ctx-mode-indent-line))
    (should-not indent-tabs-mode)))

(defun ctx-test--reindent (text)
  "TEXT with its indentation stripped and redone by `ctx-mode'."
  (with-temp-buffer
    (insert text)
    (ctx-mode)
    (goto-char (point-min))
    (while (re-search-forward "^[ \t]+" nil t) (replace-match ""))
    (let ((inhibit-message t))
      (indent-region (point-min) (point-max)))
    (buffer-string)))

(ert-deftest ctx-mode-test-indent-every-file ()
  "Strip and re-indent every example and fixture; compare with the file.
Hand-aligned continuation lines of examples/ are not compared."
  (let ((failures '()))
    (dolist (f (ctx-test--get ctx-test--expect 'files))
      (let* ((name (ctx-test--get f 'name))
             (orig (with-temp-buffer
                     (insert-file-contents (ctx-test--get f 'path))
                     (buffer-string)))
             (got (split-string (ctx-test--reindent orig) "\n"))
             (want (split-string orig "\n"))
             (skip (and (string-prefix-p "examples/" name)
                        (ctx-test--get f 'continuation_lines)))
             (ln 0))
        (should (= (length got) (length want)))
        (cl-mapc (lambda (g w)
                   (setq ln (1+ ln))
                   (unless (or (memq ln skip) (equal g w))
                     (push (format "%s:%d: re-indented to %S, file has %S" name ln g w)
                           failures)))
                 got want)))
    (ctx-test--report (nreverse failures))))

(ert-deftest ctx-mode-test-indent-closing-dedents ()
  "A `}' typed on its own line dedents; nested brackets add a level each."
  (with-temp-buffer
    (ctx-mode)
    (insert "rec f(n: t) -> f32[H] {\nlet x = g(a,\nb)\nreturn x\n}")
    (let ((inhibit-message t))
      (indent-region (point-min) (point-max)))
    (should (equal (buffer-string)
                   "rec f(n: t) -> f32[H] {\n  let x = g(a,\n    b)\n  return x\n}"))
    (goto-char (point-max))
    (insert "\nrec g() {\n    }")
    (ctx-mode-indent-line)
    (should (equal (buffer-substring (line-beginning-position) (line-end-position)) "}"))))

(provide 'ctx-mode-test)

;;; ctx-mode-test.el ends here
