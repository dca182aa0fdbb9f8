// SPDX-License-Identifier: Apache-2.0

/// The names an engine has reported as unsyncable (``LocalScan/unsyncable``), so that each is
/// reported once while the engine runs (the log, the `upload-failed` hook); the doctor's walk
/// lists them all again.
struct UnsyncableNames: Sendable {
    private var reported: Set<String> = []

    /// The paths of `found` not reported before, sorted; they count as reported from now on.
    mutating func takeNew(_ found: Set<String>) -> [String] {
        let new = found.subtracting(reported)
        reported.formUnion(new)
        return new.sorted()
    }
}
