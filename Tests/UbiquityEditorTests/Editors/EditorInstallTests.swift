// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// `ubiq editor install`: the embedded plugins are the Samples/editors/ files, go to each
/// editor's standard place, the Emacs init lines are added once, --dry-run writes nothing.
@Suite struct EditorInstallTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../Samples/editors").standardized

    static func sample(_ relative: String) throws -> String {
        try String(contentsOf: samples.appendingPathComponent(relative), encoding: .utf8)
    }

    @Test(arguments: [
        ("vim", ".vim/pack/ubiquity/start/ubiquity/plugin/ubiquity.vim", "vim/plugin/ubiquity.vim"),
        ("neovim", "data/nvim/site/pack/ubiquity/start/ubiquity/plugin/ubiquity.lua", "neovim/plugin/ubiquity.lua"),
        ("emacs", ".emacs.d/lisp/ubiquity.el", "emacs/ubiquity.el"),
    ])
    func installsTheSampleFile(editor: String, installed: String, sample: String) throws {
        let device = Device()
        let home = device.root.appendingPathComponent("home")
        // Neovim's place follows XDG_DATA_HOME (the device's "data" folder)
        let target = installed.hasPrefix("data/") ? device.root.appendingPathComponent(installed) : home.appendingPathComponent(installed)

        let dry = try device.run(["editor", "install", editor, "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry)")
        #expect(try dry.keys() == ["editor", "files", "init", "initLines", "dryRun"])
        #expect(!FileManager.default.fileExists(atPath: target.path), "--dry-run writes nothing")

        let run = try device.run(["editor", "install", editor])
        #expect(run.status == 0 && run.stdout.contains(target.path), "\(run)")
        let written = try String(contentsOf: target, encoding: .utf8)
        #expect(written == (try Self.sample(sample)), "the embedded plugin differs from Samples/editors/\(sample): run scripts/editor-plugins")
    }

    @Test func emacsInitLinesAreAddedOnce() throws {
        let device = Device()
        let initFile = device.root.appendingPathComponent("home/.emacs.d/init.el")
        try FileManager.default.createDirectory(at: initFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("(setq inhibit-startup-screen t)".utf8).write(to: initFile)
        for _ in 0..<2 {
            let run = try device.run(["editor", "install", "emacs"])
            #expect(run.status == 0, "\(run)")
        }
        let text = try String(contentsOf: initFile, encoding: .utf8)
        #expect(text.hasPrefix("(setq inhibit-startup-screen t)\n"), "the user's lines are kept")
        #expect(text.components(separatedBy: "(require 'ubiquity)").count == 2, "\(text)")

        let printOnly = Device()
        let run = try printOnly.run(["editor", "install", "emacs", "--no-init-file"])
        #expect(run.status == 0 && run.stdout.contains("(require 'ubiquity)"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: printOnly.root.appendingPathComponent("home/.emacs.d/init.el").path))
    }

    @Test func anUnknownEditorIsNamed() throws {
        let run = try Device().run(["editor", "install", "nano"])
        #expect(run.status == 64, "\(run)")
        #expect(run.stderr.contains("nano") && run.stderr.contains("vim"), "\(run)")
    }
}
