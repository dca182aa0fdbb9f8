import Glibc

/// One ``IgnoreRules`` pattern prepared for matching bytes: the same decisions as
/// `fnmatch(pattern, subject, 0)`.
///
/// A pattern whose only wildcard is `*` (almost all of them: `*.swp`, `.#*`, `#*#`, literals)
/// is matched on the UTF-8 bytes without `fnmatch`: its literal pieces must appear in order, the
/// first at the start and the last at the end unless the pattern starts or ends with `*`. (On
/// valid UTF-8 this equals matching by characters: a piece can only be found at a character
/// boundary.) Any other pattern (`?`, `[…]`, `\`) first checks its literal start and end (the
/// bytes before the first and after the last special character, which must match exactly),
/// then calls `fnmatch(3)`.
struct IgnorePattern: Sendable {
    /// Only folders match (the pattern ended with `/`).
    let directoryOnly: Bool
    /// The pattern applies to the path relative to the root (it contains `/`), not the name.
    let matchesRelativePath: Bool
    /// The pattern's bytes (after removing a trailing and a leading `/`).
    let bytes: [UInt8]
    /// `*`-only patterns: the literal pieces between the stars.
    let pieces: [[UInt8]]
    /// `*`-only patterns: whether the pattern starts (ends) with a literal piece.
    let anchoredStart: Bool
    let anchoredEnd: Bool
    /// Whether the pattern has `?`, `[` or `\` (so `fnmatch` decides).
    let needsFnmatch: Bool
    /// For `fnmatch` patterns: the literal bytes every match starts and ends with.
    let literalPrefix: [UInt8]
    let literalSuffix: [UInt8]
    /// For `fnmatch` patterns: the pattern as a C string.
    let cPattern: [CChar]

    init(_ text: String) {
        var pattern = text
        var directoryOnly = false
        if pattern.hasSuffix("/") {
            directoryOnly = true
            pattern.removeLast()
        }
        matchesRelativePath = pattern.utf8.contains(UInt8(ascii: "/"))
        if pattern.hasPrefix("/") { pattern.removeFirst() }
        self.directoryOnly = directoryOnly
        let bytes = Array(pattern.utf8)
        self.bytes = bytes
        let special: Set<UInt8> = [UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "\\")]
        let star = UInt8(ascii: "*")
        needsFnmatch = bytes.contains { special.contains($0) }
        if needsFnmatch {
            let wildcard = special.union([star])
            let first = bytes.firstIndex { wildcard.contains($0) } ?? bytes.count
            let last = bytes.lastIndex { wildcard.contains($0) } ?? -1
            literalPrefix = Array(bytes[..<first])
            // a `\` or `]` before the suffix could change what it means: only bytes after the
            // last special character count, and never a suffix that a bracket could reach
            literalSuffix = bytes.contains(UInt8(ascii: "[")) ? [] : Array(bytes[(last + 1)...])
            cPattern = Array(pattern.utf8CString)
            pieces = []
            anchoredStart = false
            anchoredEnd = false
        } else {
            literalPrefix = []
            literalSuffix = []
            cPattern = []
            pieces = bytes.split(separator: star, omittingEmptySubsequences: false).map(Array.init)
            anchoredStart = bytes.first != star
            anchoredEnd = bytes.last != star
        }
    }

    /// Whether `subject` (UTF-8 bytes, no terminating zero) matches.
    func matches(_ subject: UnsafeBufferPointer<UInt8>) -> Bool {
        if needsFnmatch {
            guard Self.hasPrefix(subject, literalPrefix), Self.hasSuffix(subject, literalSuffix),
                  subject.count >= literalPrefix.count + literalSuffix.count else { return false }
            if subject.contains(0) { return false }
            var cSubject = [CChar](repeating: 0, count: subject.count + 1)
            cSubject.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(subject)) }
            return fnmatch(cPattern, cSubject, 0) == 0
        }
        return matchesStars(subject)
    }

    private func matchesStars(_ subject: UnsafeBufferPointer<UInt8>) -> Bool {
        // pieces.count == 1: a literal
        if pieces.count == 1 { return Self.equal(subject, 0, pieces[0]) && subject.count == pieces[0].count }
        let first = pieces[0]
        let last = pieces[pieces.count - 1]
        guard subject.count >= first.count + last.count,
              Self.hasPrefix(subject, first), Self.hasSuffix(subject, last) else { return false }
        // the middle pieces, leftmost first, between the first and the last
        var position = first.count
        let end = subject.count - last.count
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let found = Self.find(piece, in: subject, from: position, to: end) else { return false }
            position = found + piece.count
        }
        return true
    }

    private static func equal(_ subject: UnsafeBufferPointer<UInt8>, _ at: Int, _ piece: [UInt8]) -> Bool {
        guard at + piece.count <= subject.count else { return false }
        for index in 0..<piece.count where subject[at + index] != piece[index] { return false }
        return true
    }

    private static func hasPrefix(_ subject: UnsafeBufferPointer<UInt8>, _ piece: [UInt8]) -> Bool {
        equal(subject, 0, piece)
    }

    private static func hasSuffix(_ subject: UnsafeBufferPointer<UInt8>, _ piece: [UInt8]) -> Bool {
        subject.count >= piece.count && equal(subject, subject.count - piece.count, piece)
    }

    private static func find(_ piece: [UInt8], in subject: UnsafeBufferPointer<UInt8>, from: Int, to end: Int) -> Int? {
        guard end - from >= piece.count else { return nil }
        for start in from...(end - piece.count) where equal(subject, start, piece) { return start }
        return nil
    }
}
