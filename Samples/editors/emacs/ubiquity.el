;;; ubiquity.el --- Ubiquity file presenters for Emacs buffers -*- lexical-binding: t -*-

;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; Buffers visiting files in a folder `ubiq daemon' syncs are file presenters (through
;; `ubiq present --editor', run with `make-process').  A remote change reverts an unmodified
;; buffer and warns about a modified one; saves are coordinated writes (other presenters save
;; first and hear of the change); the mode line shows the sync state (uploading n %,
;; downloading n %, evicted...); visiting an evicted file downloads it first.  Commands:
;; `ubiquity-status', `ubiquity-versions', `ubiquity-resolve', `ubiquity-diff'.
;; Installed by `ubiq editor install emacs'; documented in docs/editors.md.
;;
;; Hooks for your own code: `ubiquity-reloaded-hook', `ubiquity-changed-remotely-hook',
;; `ubiquity-state-hook' (run in the buffer; `ubiquity-state' holds the text).

;;; Code:

(require 'json)

(defgroup ubiquity nil "Ubiquity sync for Emacs buffers." :group 'files)

(defcustom ubiquity-command "ubiq" "The ubiq executable." :type 'string)
(defcustom ubiquity-save-timeout 10 "Seconds to wait for a coordinated write." :type 'number)

(defvar ubiquity-reloaded-hook nil "Run in a buffer after a remote change reverted it.")
(defvar ubiquity-changed-remotely-hook nil "Run in a modified buffer whose file changed remotely.")
(defvar ubiquity-state-hook nil "Run in a buffer when its sync state changed.")

(defvar-local ubiquity--process nil "The buffer's `ubiq present --editor' process.")
(defvar-local ubiquity--synced nil "Whether the buffer's file is in a synced folder.")
(defvar-local ubiquity--path nil "The presented file.")
(defvar-local ubiquity--next 1 "The next write id.")
(defvar-local ubiquity--answers nil "Answers to begin-write, by id.")
(defvar-local ubiquity--writing 0 "The id of the write in progress, or 0.")
(defvar-local ubiquity-state "" "The sync state: uploaded, uploading, conflict, excluded, evicted.")
(defvar-local ubiquity-conflicts 0 "The number of unresolved conflict versions.")
(defvar-local ubiquity-changed-remotely nil "Non-nil when the file changed remotely while modified here.")
(defvar ubiquity--saving-for-request nil "Non-nil while saving because a coordinated access asked.")

(defun ubiquity--send (buffer message)
  "Send MESSAGE (an alist) to BUFFER's process."
  (let ((process (buffer-local-value 'ubiquity--process buffer)))
    (when (and process (process-live-p process))
      (process-send-string process (concat (json-encode message) "\n"))
      t)))

(defun ubiquity--filter (process output)
  "Split PROCESS's OUTPUT into lines and handle each."
  (let ((buffer (process-get process 'ubiquity-buffer))
        (pending (concat (or (process-get process 'ubiquity-partial) "") output)))
    (while (string-match "\n" pending)
      (let ((line (substring pending 0 (match-beginning 0))))
        (setq pending (substring pending (match-end 0)))
        (when (buffer-live-p buffer)
          (ubiquity--handle buffer line))))
    (process-put process 'ubiquity-partial pending)))

(defun ubiquity--handle (buffer line)
  "Handle one message LINE for BUFFER."
  (let* ((message (ignore-errors (json-parse-string line :object-type 'alist :null-object nil :false-object nil)))
         (event (alist-get 'event message)))
    (with-current-buffer buffer
      (cond
       ((equal event "ready")
        (setq ubiquity--synced (alist-get 'synced message))
        (when ubiquity--synced (ubiquity--send buffer '((cmd . "state")))))
       ((member event '("granted" "failed"))
        (push (cons (alist-get 'id message) message) ubiquity--answers))
       ((equal event "state") (ubiquity--show-state message))
       ((equal event "didChange") (ubiquity--remote-change))
       ((equal event "didMove")
        (setq ubiquity--path (or (alist-get 'to message) ubiquity--path))
        (message "Ubiquity: moved to %s" ubiquity--path))
       ((equal event "savePresentedItemChanges")
        (ubiquity--save-on-request buffer (alist-get 'id message)))
       ((equal event "restored")
        (message "Ubiquity: an interrupted save of %s was undone (%s)" ubiquity--path (alist-get 'reason message)))))))

(defun ubiquity--state-text (message)
  "The status text of a state MESSAGE."
  (let ((sync (alist-get 'sync message)))
    (cond ((null sync) "")
          ((or (alist-get 'excluded message) (equal sync "excluded")) "excluded")
          ((or (> (or (alist-get 'conflicts message) 0) 0) (equal sync "in conflict")) "conflict")
          ((and (member sync '("uploading" "downloading")) (alist-get 'progress message))
           (format "%s %s %%" sync (alist-get 'progress message)))
          (t sync))))

(defun ubiquity--show-state (message)
  "Show the state MESSAGE in the mode line."
  (let ((text (ubiquity--state-text message))
        (before ubiquity-state))
    (setq ubiquity-state text
          ubiquity-conflicts (or (alist-get 'conflicts message) 0))
    ;; a save by renaming to a backup drops the skip-backup attribute: back up by copying
    (setq-local backup-by-copying (equal text "excluded"))
    (when (and (equal text "conflict") (not (equal before "conflict")))
      (message "Ubiquity: %s has %d conflict version(s): M-x ubiquity-versions, M-x ubiquity-resolve"
               (file-name-nondirectory (or ubiquity--path "")) ubiquity-conflicts))
    (unless (equal text before)
      (force-mode-line-update)
      (run-hooks 'ubiquity-state-hook))))

(defun ubiquity--remote-change ()
  "The file changed elsewhere: revert, or warn when the buffer has unsaved changes."
  (when (and ubiquity--path (file-exists-p ubiquity--path))
    (if (buffer-modified-p)
        (progn
          (setq ubiquity-changed-remotely t)
          (message "Ubiquity: %s changed on another device and has unsaved changes here: M-x ubiquity-diff to compare, M-x revert-buffer to take it, C-x C-s to keep yours"
                   (file-name-nondirectory ubiquity--path))
          (force-mode-line-update)
          (run-hooks 'ubiquity-changed-remotely-hook))
      (setq ubiquity-changed-remotely nil)
      (revert-buffer t t t)
      (run-hooks 'ubiquity-reloaded-hook))))

(defun ubiquity--save-on-request (buffer id)
  "Save BUFFER because a coordinated access asked, then answer message ID."
  (let ((error-text nil))
    (with-current-buffer buffer
      (when (buffer-modified-p)
        (condition-case failure
            (let ((ubiquity--saving-for-request t)) (save-buffer))
          (error (setq error-text (error-message-string failure))))))
    (ubiquity--send buffer (if error-text `((ack . ,id) (error . ,error-text)) `((ack . ,id))))))

(defun ubiquity--before-save ()
  "Take a coordinated write before the save (other presenters save first)."
  (when (and ubiquity--process ubiquity--synced (not ubiquity--saving-for-request)
             (equal (expand-file-name buffer-file-name) ubiquity--path))
    (let ((id ubiquity--next)
          (buffer (current-buffer))
          (deadline (+ (float-time) ubiquity-save-timeout 2)))
      (setq ubiquity--next (1+ id))
      (when (ubiquity--send buffer `((cmd . "begin-write") (id . ,id) (timeout . ,ubiquity-save-timeout)))
        (while (and (not (assq id ubiquity--answers)) (< (float-time) deadline)
                    (process-live-p ubiquity--process))
          (accept-process-output ubiquity--process 0.01))
        (let ((answer (cdr (assq id ubiquity--answers))))
          (setq ubiquity--answers (assq-delete-all id ubiquity--answers))
          (if (not (equal (alist-get 'event answer) "granted"))
              (message "Ubiquity: saving without coordination (%s)" (or (alist-get 'error answer) "no answer"))
            (when (alist-get 'excluded answer) (setq-local backup-by-copying t))
            (setq ubiquity--writing id)
            ;; runs once the save is over: if `after-save-hook' did not run, it failed
            (run-at-time 0 nil #'ubiquity--write-settled buffer id)))))))

(defun ubiquity--after-save ()
  "End the coordinated write (presenters hear of the change)."
  (setq ubiquity-changed-remotely nil)
  (when (and ubiquity--process (/= ubiquity--writing 0))
    (ubiquity--send (current-buffer) `((cmd . "end-write") (id . ,ubiquity--writing)))
    (setq ubiquity--writing 0)))

(defun ubiquity--write-settled (buffer id)
  "Abort write ID of BUFFER if the save did not finish."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (when (equal ubiquity--writing id)
        (ubiquity--send buffer `((cmd . "abort-write") (id . ,id) (reason . "the save failed")))
        (setq ubiquity--writing 0)))))

(defun ubiquity--attach ()
  "Present the visited file if it is in a synced folder."
  (when (and buffer-file-name (not ubiquity--process) (executable-find ubiquity-command))
    (let* ((path (expand-file-name buffer-file-name))
           (process (make-process
                     :name "ubiq-present" :noquery t :connection-type 'pipe
                     :command (list ubiquity-command "present" "--editor" "--only-synced" path)
                     :filter #'ubiquity--filter
                     :stderr (get-buffer-create " *ubiq-present-stderr*")
                     :sentinel #'ignore)))
      (process-put process 'ubiquity-buffer (current-buffer))
      (setq ubiquity--process process
            ubiquity--path path))))

(defun ubiquity--detach ()
  "Stop presenting the buffer's file."
  (when (process-live-p ubiquity--process)
    (process-send-eof ubiquity--process))
  (setq ubiquity--process nil))

(defun ubiquity-mode-line ()
  "The mode line part: empty outside synced folders."
  (if (equal ubiquity-state "") ""
    (format " [ubiq: %s%s]" ubiquity-state (if ubiquity-changed-remotely ", changed remotely: M-x ubiquity-diff" ""))))

(defun ubiquity--path-or-error ()
  "The buffer's file, or an error."
  (or (and buffer-file-name (expand-file-name buffer-file-name)) (user-error "Ubiquity: the buffer visits no file")))

(defun ubiquity--run (&rest arguments)
  "Run ubiq with ARGUMENTS; return (STATUS . OUTPUT)."
  (with-temp-buffer
    (let ((status (apply #'call-process ubiquity-command nil t nil arguments)))
      (cons status (buffer-string)))))

(defun ubiquity-status ()
  "Show the sync state of the buffer's file."
  (interactive)
  (message (if (equal ubiquity-state "") "Ubiquity: not in a synced folder" (concat "Ubiquity: " ubiquity-state))))

(defun ubiquity-versions ()
  "List the versions of the buffer's file; RET opens one."
  (interactive)
  (let* ((path (ubiquity--path-or-error))
         (result (ubiquity--run "versions" path "--json")))
    (unless (eq (car result) 0) (user-error "Ubiquity: %s" (string-trim (cdr result))))
    (let ((listing (json-parse-string (cdr result) :object-type 'alist :null-object nil :false-object nil)))
      (with-current-buffer (get-buffer-create "*ubiquity versions*")
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (format ";; versions of %s (RET: open; M-x ubiquity-resolve keeps one)\n" path))
          (seq-doseq (version (alist-get 'versions listing))
            (insert (format "%s  %s  %s  %s  %s\n" (alist-get 'id version)
                            (if (alist-get 'conflict version) "conflict" "version ")
                            (alist-get 'modified version) (alist-get 'device version) (alist-get 'url version)))))
        (special-mode)
        (local-set-key (kbd "RET") #'ubiquity--open-version)
        (pop-to-buffer (current-buffer))))))

(defun ubiquity--open-version ()
  "Open the version on this line read-only."
  (interactive)
  (let ((fields (split-string (buffer-substring (line-beginning-position) (line-end-position)) "  ")))
    (when (>= (length fields) 5)
      (view-file-other-window (car (last fields))))))

(defun ubiquity-resolve (keep)
  "Settle the buffer file's conflicts, keeping KEEP (\"current\" or a version id)."
  (interactive (list (read-string "Keep (current or a version id): " nil nil "current")))
  (let* ((path (ubiquity--path-or-error))
         (result (ubiquity--run "resolve" path "--keep" (if (equal keep "") "current" keep))))
    (unless (eq (car result) 0) (user-error "Ubiquity: %s" (string-trim (cdr result))))
    (message "Ubiquity: conflicts of %s resolved (kept %s)" (file-name-nondirectory path) keep)
    (ubiquity--send (current-buffer) '((cmd . "state")))))

(defun ubiquity-diff ()
  "Compare the buffer with its file on disk."
  (interactive)
  (diff-buffer-with-file (current-buffer)))

(defun ubiquity--download-before-visit (filename &rest _)
  "Download FILENAME first when it is an evicted file.
An evicted file has nothing at its name and its hidden stub .NAME.icloud
beside it.  Runs before the file is read: only a missing file with a stub
asks `ubiq download --only-evicted'."
  (let ((path (ignore-errors (expand-file-name filename))))
    (when (and path (not (file-remote-p path)) (not (file-exists-p path)) (not (file-symlink-p path))
               (file-readable-p (expand-file-name (concat "." (file-name-nondirectory path) ".icloud")
                                                  (file-name-directory path)))
               (executable-find ubiquity-command))
      (message "Ubiquity: downloading %s (evicted)..." (file-name-nondirectory path))
      (redisplay)
      (let ((result (ubiquity--run "download" "--only-evicted" path)))
        (if (eq (car result) 0)
            (message nil)
          (display-warning 'ubiquity (format "%s is evicted and could not be downloaded (%s); the buffer is empty"
                                             (file-name-nondirectory path) (string-trim (cdr result)))))))))

(advice-add 'find-file-noselect :before #'ubiquity--download-before-visit)
(add-hook 'find-file-hook #'ubiquity--attach)
(add-hook 'before-save-hook #'ubiquity--before-save)
(add-hook 'after-save-hook #'ubiquity--after-save)
(add-hook 'kill-buffer-hook #'ubiquity--detach)
(unless (member '(:eval (ubiquity-mode-line)) mode-line-misc-info)
  (push '(:eval (ubiquity-mode-line)) mode-line-misc-info))

(provide 'ubiquity)
;;; ubiquity.el ends here
