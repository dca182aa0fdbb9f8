// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq editor install vim|neovim|emacs`: puts the embedded editor plugin where the editor
/// loads it.
struct EditorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "editor",
        abstract: "Install the Ubiquity plugin of a text editor (vim, Neovim, Emacs).",
        discussion: """
            The plugins make buffers of synced files file presenters: remote changes reload the \
            buffer (or warn when it has unsaved changes), saves are coordinated writes, the status \
            line shows the sync state. See docs/editors.md.
            """,
        subcommands: [Install.self]
    )

    /// The editors there is a plugin for.
    enum Editor: String, ExpressibleByArgument, CaseIterable, Sendable {
        case vim, neovim, emacs

        init?(argument: String) {
            switch argument.lowercased() {
            case "vim": self = .vim
            case "neovim", "nvim": self = .neovim
            case "emacs": self = .emacs
            default: return nil
            }
        }
    }

    /// `ubiq editor install EDITOR [--dry-run] [--json]`.
    struct Install: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "install",
            abstract: "Copy the editor's plugin to its standard user plugin folder.",
            discussion: """
                vim:    ~/.vim/pack/ubiquity/start/ubiquity/plugin/ubiquity.vim
                neovim: $XDG_DATA_HOME/nvim/site/pack/ubiquity/start/ubiquity/plugin/ubiquity.lua \
                (XDG_DATA_HOME defaults to ~/.local/share)
                emacs:  ~/.emacs.d/lisp/ubiquity.el, and two lines appended to ~/.emacs.d/init.el \
                (once; --no-init-file prints them instead)
                An existing plugin file is replaced. JSON keys: editor, files (written), init \
                (the init file changed, or null), initLines, dryRun.

                Examples:
                  ubiq editor install vim
                  ubiq editor install emacs --dry-run
                """
        )

        @Argument(help: "vim, neovim (or nvim) or emacs.")
        var editor: Editor

        @Flag(help: "Print what would be done; change nothing.")
        var dryRun = false

        @Flag(help: "Emacs: do not append to init.el; print the lines to add.")
        var noInitFile = false

        @Flag(help: "Print what was done as JSON (sorted keys).")
        var json = false

        func run() throws {
            try CLI.run("editor install") {
                let plan = EditorInstallPlan(editor: editor, environment: ProcessInfo.processInfo.environment, appendInit: !noInitFile)
                let initChanged = try plan.apply(dryRun: dryRun)
                if json {
                    try DocumentCommandIO.printJSON([
                        "editor": editor.rawValue,
                        "files": plan.files.map(\.path),
                        "init": initChanged ? (plan.initFile ?? "") as Any : NSNull() as Any,
                        "initLines": plan.initLines,
                        "dryRun": dryRun,
                    ])
                    return
                }
                let verb = dryRun ? "would write" : "wrote"
                for file in plan.files { print("\(verb) \(file.path)") }
                if !plan.initLines.isEmpty {
                    if noInitFile {
                        print("add to your init file (\(plan.initFile ?? "~/.emacs.d/init.el")):")
                        for line in plan.initLines { print("  \(line)") }
                    } else if initChanged {
                        print("\(dryRun ? "would append" : "appended") to \(plan.initFile ?? ""): \(plan.initLines.joined(separator: " "))")
                    } else {
                        print("\(plan.initFile ?? "") already loads ubiquity")
                    }
                }
            }
        }
    }
}

/// Where a plugin goes and what is written (computed without touching the disk).
struct EditorInstallPlan {
    struct File {
        var path: String
        var contents: String
    }

    let editor: EditorCommand.Editor
    let files: [File]
    /// Emacs: the init file and the lines that load the plugin.
    let initFile: String?
    let initLines: [String]
    let appendInit: Bool

    init(editor: EditorCommand.Editor, environment: [String: String], appendInit: Bool) {
        self.editor = editor
        self.appendInit = appendInit
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        switch editor {
        case .vim:
            files = [File(path: home + "/.vim/pack/ubiquity/start/ubiquity/plugin/ubiquity.vim", contents: EditorPlugins.vim + "\n")]
            initFile = nil
            initLines = []
        case .neovim:
            let data = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/share"
            files = [File(path: data + "/nvim/site/pack/ubiquity/start/ubiquity/plugin/ubiquity.lua", contents: EditorPlugins.neovim + "\n")]
            initFile = nil
            initLines = []
        case .emacs:
            files = [File(path: home + "/.emacs.d/lisp/ubiquity.el", contents: EditorPlugins.emacs + "\n")]
            initFile = home + "/.emacs.d/init.el"
            initLines = ["(add-to-list 'load-path (expand-file-name \"lisp\" user-emacs-directory))", "(require 'ubiquity)"]
        }
    }

    /// Writes the files (and appends the init lines unless they are there); returns whether the
    /// init file changed (or would change).
    func apply(dryRun: Bool) throws -> Bool {
        if !dryRun {
            for file in files {
                let url = URL(fileURLWithPath: file.path)
                do {
                    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try Data(file.contents.utf8).write(to: url, options: .atomic)
                } catch {
                    throw UbiquityError(.io, "cannot write the \(editor.rawValue) plugin to '\(file.path)'", underlying: error)
                }
            }
        }
        guard let initFile, appendInit, !initLines.isEmpty else { return false }
        let existing = (try? String(contentsOfFile: initFile, encoding: .utf8)) ?? ""
        if existing.contains("(require 'ubiquity)") { return false }
        if dryRun { return true }
        var text = existing
        if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
        text += ";; Ubiquity (added by `ubiq editor install emacs`)\n" + initLines.joined(separator: "\n") + "\n"
        do {
            try FileManager.default.createDirectory(atPath: (initFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: initFile), options: .atomic)
        } catch {
            throw UbiquityError(.io, "cannot append to '\(initFile)'", underlying: error)
        }
        return true
    }
}
