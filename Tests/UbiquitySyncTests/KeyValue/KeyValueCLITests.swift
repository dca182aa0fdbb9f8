// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// `ubiq kv` and the KeyValue sample as real processes on one device: values set by one process
/// are read and watched by others; bad keys and values exit 64 with a clear message.
@Suite("ubiq kv and the KeyValue sample")
struct KeyValueCLITests {
    @Test func setGetListRemoveAndBadInput() throws {
        let device = Device()
        #expect(try device.run(["kv", "set", "theme", "blue"]).status == 0)
        #expect(try device.run(["kv", "set", "volume", "0.5", "--type", "double"]).status == 0)
        #expect(try device.run(["kv", "set", "recent", #"["a.txt",2,true,{"k":1.5}]"#, "--type", "json"]).status == 0)
        var run = try device.run(["kv", "get", "theme"])
        #expect(run.status == 0)
        #expect(run.stdout == "blue\n")
        run = try device.run(["kv", "get", "recent", "--json"])
        #expect(run.stdout == #"{"key":"recent","type":"array","value":["a.txt",2,true,{"k":1.5}]}"# + "\n")
        run = try device.run(["kv", "list"])
        #expect(run.stdout == "recent = [\"a.txt\",2,true,{\"k\":1.5}]\ntheme = blue\nvolume = 0.5\n")

        #expect(try device.run(["kv", "remove", "theme"]).status == 0)
        run = try device.run(["kv", "get", "theme"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("no value for key 'theme'"))

        run = try device.run(["kv", "set", String(repeating: "k", count: 65), "x"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("65 bytes"))
        run = try device.run(["kv", "set", "n", "twelve", "--type", "int"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("expected a whole number"))
        run = try device.run(["kv", "set", "n", "1", "--type", "colour"])
        #expect(run.status == 64)
        run = try device.run(["kv", "set", "n", "{", "--type", "json"])
        #expect(run.status == 64)
        #expect(try device.run(["kv", "list", "--container", "not a container"]).status == 64)
        // Nothing was lost by the refusals.
        #expect(try device.run(["kv", "get", "volume"]).stdout == "0.5\n")
    }

    @Test func watchAndTheSampleSeeOtherProcessesChanges() throws {
        let device = Device()
        let watch = try device.start(Binaries.ubiq, ["kv", "watch", "--json"])
        defer { watch.kill() }
        _ = try #require(watch.waitForLine(containing: "\"ready\""))
        let sampleA = try device.start(Binaries.keyValue, ["--container", "iCloud.org.ubiquity.Drive", "--device", "A"])
        defer { sampleA.kill() }
        _ = try #require(sampleA.waitForLine(containing: "ready:"))
        let sampleB = try device.start(Binaries.keyValue, ["--container", "iCloud.org.ubiquity.Drive", "--device", "B"])
        defer { sampleB.kill() }
        _ = try #require(sampleB.waitForLine(containing: "ready:"))

        sampleB.send("set green")
        sampleB.send("shared hello from B")
        #expect(sampleA.waitForLine(containing: #"device.B = "green""#) != nil)
        #expect(sampleA.waitForLine(containing: #"shared = "hello from B""#) != nil)
        #expect(watch.waitForLine(containing: #"{"reason":"serverChange","reasonCode":0,"keys":["shared"]}"#) != nil)

        #expect(try device.run(["kv", "set", "shared", "from the CLI"]).status == 0)
        #expect(sampleB.waitForLine(containing: #"changed (serverChange): shared = "from the CLI""#) != nil)
        sampleA.send("show")
        _ = try #require(sampleA.waitForLine(containing: "end"))
        #expect(sampleA.output.contains(#"shared = "from the CLI""#))
        // A process does not hear of its own sets.
        #expect(!sampleB.output.contains { $0.contains("changed") && $0.contains("device.B") })
        sampleA.send("quit")
        sampleB.send("quit")
        #expect(sampleA.wait(seconds: 30) == 0)
        #expect(sampleB.wait(seconds: 30) == 0)
    }
}
