// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// `ubiq admin schema …` and `ubiq admin role …` as real processes.
@Suite struct AdminSchemaCLITests {
    @Test func schemaImportShowExportIndexDeployAndReset() throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        let container = "iCloud.org.example.Schema"
        let admin = ["admin", "--data", data]
        #expect(try device.run(admin + ["container", "add", container]).status == 0)

        let file = device.root.appendingPathComponent("notes.ckdb")
        try """
            DEFINE SCHEMA
                CREATE ROLE Moderator;
                RECORD TYPE Note (
                    "title" STRING QUERYABLE SORTABLE SEARCHABLE,
                    "count" INT64 QUERYABLE,
                    GRANT READ TO "_world",
                    GRANT CREATE TO "_icloud",
                    GRANT READ, WRITE TO "_creator"
                );
            """.write(to: file, atomically: true, encoding: .utf8)
        let imported = try device.run(admin + ["schema", "import", container, file.path])
        #expect(imported.status == 0, "\(imported)")
        #expect(imported.stdout.contains("1 record type"))

        let show = try device.run(admin + ["schema", "show", container])
        #expect(show.status == 0, "\(show)")
        #expect(show.stdout.contains("Note"))
        #expect(show.stdout.contains("roles: Moderator"))
        #expect(show.stdout.split(separator: "\n").contains { $0.split(separator: " ") == ["count", "INT64", "yes", "no", "no"] })
        #expect(show.stdout.contains("permissions: _world read; _icloud create; _creator read, write"))
        let json = try device.run(admin + ["schema", "show", container, "--json"])
        let parsed = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect((parsed?["roles"] as? [String]) == ["Moderator"])
        #expect(((parsed?["recordTypes"] as? [[String: Any]])?.first?["name"] as? String) == "Note")

        let index = try device.run(admin + ["schema", "index", container, "Note", "count", "--sortable", "on", "--queryable", "off"])
        #expect(index.status == 0, "\(index)")
        #expect(index.stdout.contains("Note.count INT64 queryable off sortable on searchable off"))

        let exported = try device.run(admin + ["schema", "export", container])
        #expect(exported.status == 0)
        #expect(exported.stdout.contains(#""count" INT64 SORTABLE"#))
        #expect(exported.stdout.contains(#"GRANT READ, WRITE TO "_creator""#))

        // Production is empty until deployed; deploy lists what it adds.
        #expect(try device.run(admin + ["schema", "show", container, "--environment", "production"]).stdout.contains("0 record types"))
        let deploy = try device.run(admin + ["schema", "deploy", container])
        #expect(deploy.status == 0, "\(deploy)")
        #expect(deploy.stdout.contains("added record type Note"))
        let production = try device.run(admin + ["schema", "export", container, "--environment", "production"])
        #expect(production.stdout == exported.stdout)

        // A type change is refused, listing it, exit 1.
        try #"RECORD TYPE Note ( "count" STRING );"#.write(to: file, atomically: true, encoding: .utf8)
        let retype = try device.run(admin + ["schema", "import", container, file.path])
        #expect(retype.status == 1)
        #expect(retype.stderr.contains("Note.count is INT64"))

        let reset = try device.run(admin + ["schema", "reset", container])
        #expect(reset.status == 0, "\(reset)")

        // Usage errors: exit 64, naming the argument.
        let badEnvironment = try device.run(admin + ["schema", "show", container, "--environment", "staging"])
        #expect(badEnvironment.status == 64)
        #expect(badEnvironment.stderr.contains("--environment"))
        let badSwitch = try device.run(admin + ["schema", "index", container, "Note", "count", "--queryable", "yes"])
        #expect(badSwitch.status == 64)
        #expect(badSwitch.stderr.contains("--queryable"))
        let nothing = try device.run(admin + ["schema", "index", container, "Note", "count"])
        #expect(nothing.status == 64)
        let notSearchable = try device.run(admin + ["schema", "index", container, "Note", "count", "--searchable", "on"])
        #expect(notSearchable.status == 64)
        #expect(notSearchable.stderr.contains("only STRING"))
        try "RECORD TYPE Note ( \"n\" NUMBER );".write(to: file, atomically: true, encoding: .utf8)
        let badFile = try device.run(admin + ["schema", "import", container, file.path])
        #expect(badFile.status == 64)
        #expect(badFile.stderr.contains("line 1: unknown field type NUMBER"))
        let missingFile = try device.run(admin + ["schema", "import", container, device.root.appendingPathComponent("none.ckdb").path])
        #expect(missingFile.status == 64)
        let noContainer = try device.run(admin + ["schema", "show", "iCloud.missing"])
        #expect(noContainer.status == 1)
        #expect(noContainer.stderr.contains("iCloud.missing"))
    }

    @Test func roleAddGrantSetShowRevoke() throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        let container = "iCloud.org.example.Roles"
        let admin = ["admin", "--data", data]
        #expect(try device.run(admin + ["container", "add", container]).status == 0)
        #expect(try device.run(admin + ["user", "add", "mei"]).status == 0)
        try #"RECORD TYPE Note ( "title" STRING QUERYABLE, GRANT READ TO "_world", GRANT CREATE TO "_icloud", GRANT WRITE TO "_creator" );"#
            .write(to: device.root.appendingPathComponent("s.ckdb"), atomically: true, encoding: .utf8)
        #expect(try device.run(admin + ["schema", "import", container, device.root.appendingPathComponent("s.ckdb").path]).status == 0)

        #expect(try device.run(admin + ["role", "add", container, "Moderator"]).status == 0)
        let grant = try device.run(admin + ["role", "grant", container, "Moderator", "mei"])
        #expect(grant.status == 0, "\(grant)")
        let recordName = grant.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(recordName.hasPrefix("_") && recordName.count == 33)
        let set = try device.run(admin + ["role", "set", container, "Note", "Moderator", "--write"])
        #expect(set.status == 0, "\(set)")
        #expect(set.stdout.contains("Moderator read, write"))
        #expect(try device.run(admin + ["role", "set", container, "Note", "_world", "--none"]).stdout.contains("Note: _icloud create; _creator read, write; Moderator read, write"))

        let show = try device.run(admin + ["role", "show", container])
        #expect(show.status == 0)
        #expect(show.stdout.contains("role Moderator: \(recordName)"))
        #expect(show.stdout.contains("Note: _icloud create; _creator read, write; Moderator read, write"))
        #expect(try device.run(admin + ["role", "revoke", container, "Moderator", recordName]).status == 0)
        #expect(try device.run(admin + ["role", "show", container]).stdout.contains("role Moderator: no members"))

        // Errors: usage 64, unknown things 1.
        #expect(try device.run(admin + ["role", "set", container, "Note", "_world", "--write"]).status == 64)
        #expect(try device.run(admin + ["role", "set", container, "Note", "Moderator"]).status == 64)
        #expect(try device.run(admin + ["role", "set", container, "Note", "Moderator", "--none", "--read"]).status == 64)
        #expect(try device.run(admin + ["role", "add", container, "_admins"]).status == 64)
        let ghost = try device.run(admin + ["role", "grant", container, "Ghost", "mei"])
        #expect(ghost.status == 1)
        #expect(ghost.stderr.contains("no role Ghost"))
        let nobody = try device.run(admin + ["role", "grant", container, "Moderator", "nobody"])
        #expect(nobody.status == 1)
        #expect(nobody.stderr.contains("nobody"))
        let noType = try device.run(admin + ["role", "set", container, "Missing", "Moderator", "--read"])
        #expect(noType.status == 1)
        #expect(noType.stderr.contains("no record type Missing"))
    }
}
