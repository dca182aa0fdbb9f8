import Glibc
import UbiquityCore

/// ``IgnoreRules`` as the scanner asks them: names matched straight from `readdir`'s buffer
/// (the scanner calls this for every entry, so per-call string work would dominate a scan).
/// The rules' patterns are prepared once when the rules are made, so this only wraps the bytes.
struct IgnoreMatcher {
    private let rules: IgnoreRules

    init(_ rules: IgnoreRules) {
        self.rules = rules
    }

    /// Whether the entry named `name` (a C string) at `relativePath` is ignored.
    func isIgnored(name: UnsafePointer<CChar>, relativePath: @autoclosure () -> String, isDirectory: Bool) -> Bool {
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self),
                                        count: strlen(name))
        return rules.isIgnored(nameBytes: bytes, relativePath: relativePath, isDirectory: isDirectory)
    }
}
