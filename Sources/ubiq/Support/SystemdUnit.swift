// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `--install-service` / `--uninstall-service` of `ubiq daemon` and `ubiq serve`: systemd user
/// units (the texts of `Samples/systemd/`, with the path of the running `ubiq` and the flags given)
/// in `$XDG_CONFIG_HOME/systemd/user/`, enabled and started with `systemctl --user`.
struct ServiceInstallOptions: ParsableArguments {
    @Flag(help: "Write a systemd user unit that runs this command with the other flags given, enable it and start it, then exit.")
    var installService = false

    @Flag(help: "Stop, disable and remove the systemd user unit, then exit.")
    var uninstallService = false

    @Flag(help: "With --install-service: write and enable the unit but do not start it now.")
    var noStart = false

    func validate() throws {
        if installService && uninstallService { throw ValidationError("--install-service and --uninstall-service exclude each other") }
        if noStart && !installService { throw ValidationError("--no-start goes with --install-service") }
    }

    /// Whether the command is to install or remove its unit instead of running.
    var requested: Bool { installService || uninstallService }
}

/// A systemd user unit of Ubiquity.
struct SystemdUnit {
    /// `ubiquity-daemon.service` or `ubiquity-serve.service`.
    let name: String
    /// The unit's text, with `ExecStart=/usr/local/bin/ubiq …` to be replaced.
    let template: String

    /// The daemon's unit (`Samples/systemd/ubiquity-daemon.service`).
    static let daemon = SystemdUnit(name: "ubiquity-daemon.service", template: """
        # Ubiquity's per-user daemon: file coordination, the metadata index, and sync of ~/Ubiquity for
        # the signed-in account. Install with `ubiq daemon --install-service` (which writes this unit with
        # the path of the ubiq it ran from and the daemon flags given), or copy it to
        # ~/.config/systemd/user/ and run: systemctl --user enable --now ubiquity-daemon.service
        [Unit]
        Description=Ubiquity daemon (file coordination, metadata index, document sync)
        Documentation=man:ubiq(1)
        Wants=network-online.target
        After=network-online.target ubiquity-serve.service

        [Service]
        Type=simple
        ExecStart=/usr/local/bin/ubiq daemon
        Restart=on-failure
        RestartSec=5
        # On SIGTERM the daemon stops syncing at a safe point; the journal keeps what was done.
        TimeoutStopSec=60

        [Install]
        WantedBy=default.target
        """)

    /// The server's unit (`Samples/systemd/ubiquity-serve.service`).
    static let serve = SystemdUnit(name: "ubiquity-serve.service", template: """
        # Ubiquity's records server (CloudKit Web Services compatible), for this user, on loopback.
        # Install with `ubiq serve --install-service` (which writes this unit with the path of the ubiq it
        # ran from and the serve flags given), or copy it to ~/.config/systemd/user/ and run:
        # systemctl --user enable --now ubiquity-serve.service
        [Unit]
        Description=Ubiquity records server
        Documentation=man:ubiq(1)
        Wants=network-online.target
        After=network-online.target

        [Service]
        Type=simple
        ExecStart=/usr/local/bin/ubiq serve
        Restart=on-failure
        RestartSec=5
        # Requests in flight finish on SIGTERM (--shutdown-grace, 30 s by default).
        TimeoutStopSec=60
        # Each connection is an open file (at most --max-connections, 512 by default, plus an eighth
        # being refused), beside the stores' files: well above the usual 1024.
        LimitNOFILE=65536

        [Install]
        WantedBy=default.target
        """)

    /// The unit for `ubiq` at `executable` run with `arguments` (the subcommand first) from
    /// `directory`, with the environment's `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME`
    /// and `UBIQUITY_*` variables (the unit then finds the same account, folder and data), except
    /// the test harness's switches (``harnessPrefixes``).
    func render(executable: String, arguments: [String], directory: String?, environment: [String: String]) -> String {
        let command = ([executable] + arguments).map(SystemdUnit.quote).joined(separator: " ")
        var service = ["ExecStart=\(command)"]
        if let directory { service.append("WorkingDirectory=\(SystemdUnit.quote(directory))") }
        for key in environment.keys.sorted() where ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"].contains(key)
            || (key.hasPrefix("UBIQUITY_") && !SystemdUnit.harnessPrefixes.contains { key.hasPrefix($0) }) {
            service.append("Environment=\(SystemdUnit.quote("\(key)=\(environment[key] ?? "")"))")
        }
        let original = "ExecStart=/usr/local/bin/ubiq " + (name == SystemdUnit.daemon.name ? "daemon" : "serve")
        return template.replacingOccurrences(of: original, with: service.joined(separator: "\n"))
    }

    /// `UBIQUITY_*` variables of the project's tests and benchmarks (which tests run, how they
    /// log, where their PostgreSQL is), never the daemon's or the server's settings: a unit
    /// installed from a shell that ran the tests does not carry them.
    static let harnessPrefixes = ["UBIQUITY_TEST_", "UBIQUITY_SKIP_", "UBIQUITY_RUN_", "UBIQUITY_SLOW_", "UBIQUITY_SETUP_",
                                  "UBIQUITY_EDITOR_"]

    /// A word for a unit file's command line: quoted when it has spaces, quotes, backslashes or
    /// `%` or `$` (which systemd would expand).
    static func quote(_ word: String) -> String {
        let special = word.isEmpty || word.contains { " \t\"'\\%$;".contains($0) }
        guard special else { return word }
        let escaped = word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "%", with: "%%").replacingOccurrences(of: "$", with: "$$")
        return "\"\(escaped)\""
    }
}
