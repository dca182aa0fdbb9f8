// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// Support for the editor tests: real editors (vim, nvim, emacs -nw) in tmux, each device with
/// its own tmux server, daemon and synced folder. The folders are under /var/tmp, never /tmp
/// (vim's default 'backupskip' covers /tmp/*, where it never saves by rename).
enum EditorRig {
    /// The absolute path of `tool` on PATH, or nil.
    static func which(_ tool: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Whether tmux and every editor in `editors` are installed.
    static func available(_ editors: String...) -> Bool {
        (["tmux"] + editors).allSatisfy { which($0) != nil }
    }

    /// Why an editor test is skipped: what is not installed (or nothing).
    static func missing(_ editors: String...) -> String {
        let absent = (["tmux"] + editors).filter { which($0) == nil }
        if absent.isEmpty { return "" }
        return " (not installed: \(absent.joined(separator: ", ")); scripts/setup installs them on Debian)"
    }

    /// Whether the whole (slow) editor suite runs: UBIQUITY_EDITOR_TESTS=1.
    static var fullSuite: Bool { ProcessInfo.processInfo.environment["UBIQUITY_EDITOR_TESTS"] == "1" }

    /// Runs a tool to completion; returns its status and stdout. Spawned and reaped directly
    /// (posix_spawn, waitpid), its output through a file: a tmux server started by the tool
    /// inherits whatever the client had open and never closes it, which Foundation's Process
    /// would wait for.
    @discardableResult
    static func tool(_ path: String, _ arguments: [String], environment: [String: String]) -> (status: Int32, output: String) {
        let file = NSTemporaryDirectory() + "/ubq-tool-" + UUID().uuidString
        defer { unlink(file) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        guard posix_spawn(&pid, path, &actions, nil, argv, envp) == 0 else { return (-1, "") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let data = FileManager.default.contents(atPath: file) ?? Data()
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exit, String(decoding: data, as: UTF8.self))
    }

    /// Polls `check` until it holds (a hang guard, not a timing assertion).
    static func eventually(_ what: String, seconds: Double = 120, _ check: () -> Bool) -> Bool {
        SyncRig.eventually(what, seconds: seconds, check)
    }

    /// A folder under /var/tmp, removed by `remove()`.
    static func scratch() -> URL {
        let url = URL(fileURLWithPath: "/var/tmp/ubqe-" + String(UUID().uuidString.prefix(8)))
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// One device with a synced folder under /var/tmp, its daemon, and editors in its own tmux.
final class EditorDevice: Sendable {
    enum Editor: String, Sendable { case vim, nvim, emacs }

    let device = Device()
    let name: String
    let cloud: SyncRig.Cloud
    /// /var/tmp/ubqe-XXXX/NAME: holds the synced folder, the dump file, the tmux socket.
    let base: URL
    private let daemon = SyncRig.LockedProcess()
    private let editorRunning = Mutex<Editor?>(nil)

    var folder: URL { base.appendingPathComponent("sync") }
    var dumpFile: URL { base.appendingPathComponent("dump.jsonl") }
    var tmuxSocket: String { base.appendingPathComponent("tmux.sock").path }

    init(_ name: String, _ cloud: SyncRig.Cloud, scratch: URL) {
        self.name = name
        self.cloud = cloud
        base = scratch.appendingPathComponent(name)
        try! FileManager.default.createDirectory(at: base.appendingPathComponent("sync"), withIntermediateDirectories: true)
    }

    func startDaemon() throws {
        let arguments = ["daemon", "--log-level", ProcessInfo.processInfo.environment["UBIQUITY_TEST_SYNC_LOG"] ?? "warning",
                         "--server", cloud.url, "--api-token=" + cloud.apiToken, "--web-auth-token=" + cloud.webToken,
                         "--folder", folder.path, "--device-name", name]
        let process = try device.start(Binaries.ubiq, arguments)
        guard process.waitForLine(containing: "coordination service listening on", seconds: 60) != nil else {
            process.kill()
            throw DeviceError.didNotStart("ubiq daemon (\(name))")
        }
        daemon.set(process)
    }

    func stopDaemon() { daemon.take()?.kill(SIGTERM) }

    func url(_ relative: String) -> URL { folder.appendingPathComponent(relative) }

    func write(_ relative: String, _ text: String) throws { try Data(text.utf8).write(to: url(relative)) }

    func read(_ relative: String) -> String? {
        (try? Data(contentsOf: url(relative))).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `ubiq status PATH --json`'s sync state.
    func syncStatus(_ relative: String) -> String? {
        guard let run = try? device.run(["status", url(relative).path, "--json"]), run.status == 0,
              let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] else { return nil }
        return json["sync"] as? String
    }

    // MARK: Editors

    /// Installs the plugin with `ubiq editor install` (the tested path) and opens `relative` in
    /// the editor, in this device's tmux; the test configuration appends one JSON line to
    /// `dumpFile` for every plugin event (state, reloaded, changedRemotely) and for `probe`.
    func open(_ editor: Editor, _ relative: String, extraVimrc: String = "") throws {
        let install = try device.run(["editor", "install", editor == .nvim ? "neovim" : editor.rawValue])
        #expect(install.status == 0, "\(install)")
        let ubiq = Binaries.ubiq.path
        let launch = base.appendingPathComponent("launch-\(editor.rawValue).sh")
        let config: URL
        let command: String
        switch editor {
        case .vim, .nvim:
            config = base.appendingPathComponent("test-\(editor.rawValue).vim")
            try Data("""
                set nocompatible laststatus=2 shortmess+=I nomore
                let g:ubiquity_command = '\(ubiq)'
                function! UbqDump(event) abort
                  let buf = a:event ==# 'probe' ? bufnr('%') : get(g:, 'ubiquity_event_buffer', bufnr('%'))
                  call writefile([json_encode({'event': a:event, 'text': join(getbufline(buf, 1, '$'), "\\n"),
                        \\ 'modified': getbufvar(buf, '&modified') ? 1 : 0, 'state': getbufvar(buf, 'ubiquity_state', '')})],
                        \\ '\(dumpFile.path)', 'a')
                endfunction
                autocmd User UbiquityReloaded call UbqDump('reloaded')
                autocmd User UbiquityChangedRemotely call UbqDump('changedRemotely')
                autocmd User UbiquityState call UbqDump('state')
                \(extraVimrc)

                """.utf8).write(to: config)
            let binary = editor == .vim ? "vim -N -i NONE" : "nvim -i NONE"
            command = "exec \(binary) -u '\(config.path)' '\(url(relative).path)'"
        case .emacs:
            config = base.appendingPathComponent("test-emacs.el")
            try Data("""
                (setq ubiquity-command "\(ubiq)")
                (load (expand-file-name ".emacs.d/init.el" "\(device.root.appendingPathComponent("home").path)"))
                (require 'json)
                (defun ubq-dump (event)
                  (let ((text (buffer-substring-no-properties (point-min) (point-max))))
                    (when (string-suffix-p "\\n" text) (setq text (substring text 0 -1)))
                    (write-region (concat (json-encode `((event . ,event) (text . ,text)
                                                         (modified . ,(if (buffer-modified-p) 1 0)) (state . ,ubiquity-state))) "\\n")
                                  nil "\(dumpFile.path)" t 'silent)))
                (add-hook 'ubiquity-reloaded-hook (lambda () (ubq-dump "reloaded")))
                (add-hook 'ubiquity-changed-remotely-hook (lambda () (ubq-dump "changedRemotely")))
                (add-hook 'ubiquity-state-hook (lambda () (ubq-dump "state")))
                (defun ubq-probe () (interactive) (ubq-dump "probe"))

                """.utf8).write(to: config)
            command = "exec emacs -nw -Q -l '\(config.path)' '\(url(relative).path)'"
        }
        try Data("#!/bin/sh\n\(command)\n".utf8).write(to: launch)
        let run = tmux(["-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "160", "-y", "40", "sh '\(launch.path)'"])
        #expect(run.status == 0, "tmux new-session failed: \(run.output)")
        editorRunning.withLock { $0 = editor }
    }

    @discardableResult
    func tmux(_ arguments: [String]) -> (status: Int32, output: String) {
        var environment = device.environment
        environment["TERM"] = "xterm-256color"
        environment.removeValue(forKey: "TMUX")
        return EditorRig.tool(EditorRig.which("tmux") ?? "/usr/bin/tmux", ["-S", tmuxSocket] + arguments, environment: environment)
    }

    /// Types `text` literally.
    func type(_ text: String) { tmux(["send-keys", "-t", "main", "-l", text]) }
    /// Sends key names (Escape, Enter, C-x…).
    func keys(_ names: String...) { tmux(["send-keys", "-t", "main"] + names) }

    /// Runs an editor command: `:CMD` in vim/nvim, `M-x CMD` in emacs.
    func command(_ command: String) {
        switch editorRunning.withLock({ $0 }) {
        case .emacs?:
            keys("M-x")
            type(command)
            keys("Enter")
        default:
            keys("Escape")
            type(":" + command)
            keys("Enter")
        }
    }

    /// Saves the buffer.
    func save() {
        if editorRunning.withLock({ $0 }) == .emacs { keys("C-x", "C-s") } else { command("w") }
    }

    /// The screen.
    func screen() -> String { tmux(["capture-pane", "-p", "-t", "main"]).output }

    /// The editor's process id.
    func editorPID() -> pid_t? { Int32(tmux(["list-panes", "-t", "main", "-F", "#{pane_pid}"]).output.trimmingCharacters(in: .whitespacesAndNewlines)) }

    /// The dump lines so far.
    func dumps() -> [[String: Any]] {
        guard let text = try? String(contentsOf: dumpFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits for a dump line matching `match` after the first `after` lines.
    func waitForDump(_ what: String, after: Int = 0, seconds: Double = 60, _ match: ([String: Any]) -> Bool) -> [String: Any]? {
        var found: [String: Any]?
        _ = EditorRig.eventually("\(name): \(what)", seconds: seconds) {
            found = dumps().dropFirst(after).first(where: match)
            return found != nil
        }
        return found
    }

    /// Asks the editor for a `probe` dump of its buffer and returns it.
    func probe() -> [String: Any]? {
        let count = dumps().count
        if editorRunning.withLock({ $0 }) == .emacs { command("ubq-probe") } else { command("call UbqDump('probe')") }
        return waitForDump("a probe", after: count, seconds: 30) { $0["event"] as? String == "probe" }
    }

    func closeEditor() {
        guard editorRunning.withLock({ value in defer { value = nil }; return value }) != nil else { return }
        let server = Int32(tmux(["display-message", "-p", "#{pid}"]).output.trimmingCharacters(in: .whitespacesAndNewlines))
        let pane = editorPID()
        let killed = tmux(["kill-server"])
        if killed.status != 0 { FileHandle.standardError.write(Data("tmux kill-server: \(killed.status)\n".utf8)) }
        // and by pid, in case the server did not go (the editor's job exits at end of stdin)
        for pid in [pane, server].compactMap({ $0 }) where pid > 0 { kill(pid, SIGKILL) }
    }

    deinit {
        closeEditor()
        stopDaemon()
    }
}
