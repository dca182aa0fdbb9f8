import Foundation
import Glibc
import Logging
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityIndex

/// Collects every batch of a watcher's stream on a task.
final class BatchLog: Sendable {
    private let batches = Mutex<[WatchBatch]>([])

    /// Starts consuming `stream`.
    func consume(_ stream: AsyncStream<WatchBatch>) -> Task<Void, Never> {
        Task { [self] in
            for await batch in stream { batches.withLock { $0.append(batch) } }
        }
    }

    var changes: [WatchChange] { batches.withLock { $0.flatMap(\.changes) } }
    var rescans: [RescanRequest] { batches.withLock { $0.flatMap(\.rescans) } }
}

/// A watcher on a fresh temporary root, with helpers that make real system calls.
struct WatchFixture {
    let root: String
    let watcher: FileWatcher
    let log = BatchLog()
    let consumer: Task<Void, Never>

    init(rules: IgnoreRules = .defaults,
         configuration: FileWatcher.Configuration = .init(settle: .milliseconds(100), maximumLatency: .seconds(2)),
         before: (String) throws -> Void = { _ in }) throws {
        root = try Self.temporaryFolder()
        try before(root)
        watcher = FileWatcher(configuration: configuration, logger: Logger(label: "test.watcher"))
        consumer = log.consume(watcher.batches)
        try watcher.watch(root: root, ignoring: rules)
    }

    static func temporaryFolder() throws -> String {
        var template = Array("/tmp/ubiq-watch-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw UbiquityError.posix("mkdtemp") }
        return String(cString: made)
    }

    func path(_ relative: String) -> String { root + "/" + relative }

    /// Polls until `condition` holds (never asserts on elapsed time; the timeout only ends a hang).
    @discardableResult
    func wait(_ what: String, timeout: Duration = .seconds(30),
              _ condition: ([WatchChange], [RescanRequest]) -> Bool) async throws -> Bool {
        let clock = ContinuousClock()
        let end = clock.now + timeout
        while clock.now < end {
            if condition(log.changes, log.rescans) { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("timed out waiting for \(what); changes: \(log.changes), rescans: \(log.rescans)")
        return false
    }

    /// Waits until everything before now was delivered and consumed (a marker file's change arrives).
    func quiesce() async throws {
        let marker = path("zz-marker-\(UUID().uuidString)")
        try WatcherFS.touch(marker)
        try await watcher.sync(root: root, timeout: .seconds(30))
        try await wait("marker \(marker)") { changes, _ in changes.contains(.changed(marker)) }
    }

    /// Changes after index `start`, without marker files.
    func changes(since start: Int) -> [WatchChange] {
        Array(log.changes.dropFirst(start)).filter { change in
            if case .changed(let path) = change { return !path.contains("/zz-marker-") }
            if case .removed(let path) = change { return !path.contains("/zz-marker-") }
            return true
        }
    }

    func finish() {
        watcher.stop()
        consumer.cancel()
        WatcherFS.removeTree(root)
    }
}

/// File system helpers that make exactly the system calls a test means.
enum WatcherFS {
    static func touch(_ path: String) throws {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw UbiquityError.posix("open", path: path) }
        close(descriptor)
    }

    static func writeFile(_ path: String, _ text: String, flags: Int32 = O_CREAT | O_WRONLY | O_TRUNC) throws {
        let descriptor = open(path, flags | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw UbiquityError.posix("open", path: path) }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard write(descriptor, bytes, bytes.count) == bytes.count else { throw UbiquityError.posix("write", path: path) }
    }

    static func makeFolder(_ path: String) throws {
        guard mkdir(path, 0o755) == 0 else { throw UbiquityError.posix("mkdir", path: path) }
    }

    static func move(_ from: String, _ to: String) throws {
        guard rename(from, to) == 0 else { throw UbiquityError.posix("rename", path: from) }
    }

    static func remove(_ path: String) throws {
        guard unlink(path) == 0 else { throw UbiquityError.posix("unlink", path: path) }
    }

    static func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Whether `path` is reported as changed or lies inside a rescanned subtree.
    static func isCovered(_ path: String, changes: [WatchChange], rescans: [RescanRequest]) -> Bool {
        changes.contains(.changed(path)) || rescans.contains { WatchPaths.isWithin(path, root: $0.path) }
    }
}
