// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// Content-defined chunking: FastCDC (Xia et al., "The Design of Fast Content-Defined Chunking
/// for Data Deduplication Based Storage Systems", 2020) with cut-point skipping and normalized
/// chunking.
///
/// The chunker is incremental: feed it buffers of any size, in order, and it says where chunks
/// end. It is deterministic — the gear table and the masks are fixed in the source — so the
/// client and the server cut the same content at the same places, and an edit in the middle of
/// a file changes only the one or two chunks around it.
///
/// ```swift
/// var chunker = FastCDC()
/// var lengths: [Int] = []
/// for buffer in buffers { lengths += chunker.update(buffer) }
/// if let last = chunker.finish() { lengths.append(last) }
/// ```
///
/// Where a chunk may end: never before ``Parameters/minimumSize`` bytes (those are skipped
/// unhashed), with a hard mask (`log2(average) + level` bits) up to ``Parameters/averageSize``,
/// an easy mask (`log2(average) - level` bits) after it, and always at ``Parameters/maximumSize``.
/// The rolling hash is the gear hash `h = (h << 1) + gear[byte]`, restarted at every chunk; the
/// masks test its top bits, which depend on the last 40–64 bytes.
public struct FastCDC: Sendable {
    /// The chunking parameters. Both sides of a deduplicating transfer must use the same ones
    /// (the server advertises its own).
    public struct Parameters: Sendable, Hashable, CustomStringConvertible {
        /// No chunk but the last is shorter than this.
        public var minimumSize: Int
        /// The target size; a power of two.
        public var averageSize: Int
        /// No chunk is longer than this.
        public var maximumSize: Int
        /// The normalization level (0–3): how many mask bits are added before the average size
        /// and removed after it. Higher levels concentrate chunk sizes around the average.
        public var normalizationLevel: Int

        /// 16 KiB / 64 KiB / 256 KiB, normalization level 2.
        public static let `default` = Parameters(unchecked: 16 << 10, averageSize: 64 << 10, maximumSize: 256 << 10, normalizationLevel: 2)

        /// The algorithm's name on the wire.
        public static let algorithm = "fastcdc2020"

        /// Makes parameters, checking them: `64 ≤ minimum < average < maximum ≤ 1 GiB`, the
        /// average a power of two, the level in 0–3.
        /// - Throws: `UbiquityError` (`invalidArgument`) naming the offending value.
        public init(minimumSize: Int, averageSize: Int, maximumSize: Int, normalizationLevel: Int = 2) throws {
            guard minimumSize >= 64 else {
                throw UbiquityError(.invalidArgument, "the minimum chunk size must be at least 64 bytes, not \(minimumSize)")
            }
            guard averageSize > minimumSize, averageSize.nonzeroBitCount == 1 else {
                throw UbiquityError(.invalidArgument, "the average chunk size must be a power of two above the minimum (\(minimumSize)), not \(averageSize)")
            }
            guard maximumSize > averageSize, maximumSize <= 1 << 30 else {
                throw UbiquityError(.invalidArgument, "the maximum chunk size must be above the average (\(averageSize)) and at most 1 GiB, not \(maximumSize)")
            }
            guard (0...3).contains(normalizationLevel) else {
                throw UbiquityError(.invalidArgument, "the normalization level must be 0, 1, 2 or 3, not \(normalizationLevel)")
            }
            self.init(unchecked: minimumSize, averageSize: averageSize, maximumSize: maximumSize, normalizationLevel: normalizationLevel)
        }

        private init(unchecked minimumSize: Int, averageSize: Int, maximumSize: Int, normalizationLevel: Int) {
            self.minimumSize = minimumSize
            self.averageSize = averageSize
            self.maximumSize = maximumSize
            self.normalizationLevel = normalizationLevel
        }

        /// `fastcdc2020 min=16384 avg=65536 max=262144 level=2`.
        public var description: String {
            "\(Self.algorithm) min=\(minimumSize) avg=\(averageSize) max=\(maximumSize) level=\(normalizationLevel)"
        }

        /// `{"algorithm", "minimumSize", "averageSize", "maximumSize", "normalizationLevel"}`.
        public var json: JSONValue {
            .object([
                "algorithm": .string(Self.algorithm),
                "minimumSize": .integer(Int64(minimumSize)),
                "averageSize": .integer(Int64(averageSize)),
                "maximumSize": .integer(Int64(maximumSize)),
                "normalizationLevel": .integer(Int64(normalizationLevel)),
            ])
        }

        /// Reads the JSON form; another algorithm than ``algorithm`` is an error.
        public init(json: JSONValue, path: String) throws {
            let reader = try WireReader(json, path: path)
            let algorithm = try reader.string("algorithm") ?? Self.algorithm
            guard algorithm == Self.algorithm else {
                throw WireReader.invalid(reader.path("algorithm"), "unknown chunking algorithm \(algorithm); this build knows \(Self.algorithm)")
            }
            func size(_ key: String) throws -> Int {
                guard let value = try reader.integer(key) else { throw WireReader.missing(reader.path(key), "a number") }
                guard let int = Int(exactly: value) else { throw WireReader.invalid(reader.path(key), "out of range") }
                return int
            }
            try self.init(minimumSize: size("minimumSize"), averageSize: size("averageSize"), maximumSize: size("maximumSize"),
                          normalizationLevel: Int(try reader.integer("normalizationLevel") ?? 2))
        }

        /// log2 of the average size.
        var averageBits: Int { averageSize.trailingZeroBitCount }
    }

    /// The parameters in use.
    public let parameters: Parameters
    /// The hard mask, tested before the average size.
    private let maskS: UInt64
    /// The easy mask, tested after the average size.
    private let maskL: UInt64
    /// The rolling gear hash of the current chunk.
    private var hash: UInt64 = 0
    /// How many bytes the current, still open chunk has.
    public private(set) var pendingCount: Int = 0

    /// A chunker at the start of a stream.
    public init(parameters: Parameters = .default) {
        self.parameters = parameters
        let bits = parameters.averageBits
        maskS = FastCDC.topBits(min(63, bits + parameters.normalizationLevel))
        maskL = FastCDC.topBits(max(1, bits - parameters.normalizationLevel))
    }

    /// A mask of the `count` most significant bits.
    static func topBits(_ count: Int) -> UInt64 { ~UInt64(0) << UInt64(64 - count) }

    /// Scans bytes that continue the stream. Returns how many of them complete the current
    /// chunk (it ends after `bytes[..<n]`, and the next chunk starts with `bytes[n...]`, which
    /// the caller passes in again), or nil when all of `bytes` belong to the still-open chunk.
    public mutating func boundary(in bytes: UnsafeRawBufferPointer) -> Int? {
        let count = bytes.count
        guard count > 0, let raw = bytes.baseAddress else { return nil }
        let base = raw.assumingMemoryBound(to: UInt8.self)
        var index = 0
        var pending = pendingCount
        let minimum = parameters.minimumSize
        if pending < minimum {
            // Cut-point skipping: the first `minimum` bytes of a chunk are not even hashed.
            let skip = Swift.min(minimum - pending, count)
            pending += skip
            index = skip
            if index == count {
                pendingCount = pending
                return nil
            }
        }
        let average = parameters.averageSize
        let maximum = parameters.maximumSize
        let maskS = self.maskS
        let maskL = self.maskL
        var hash = self.hash
        let cut: Int? = FastCDC.gear.withUnsafeBufferPointer { table -> Int? in
            let gear = table.baseAddress!
            if pending < average {
                let start = index
                let stop = Swift.min(count, index + (average - pending))
                while index < stop {
                    hash = (hash &<< 1) &+ gear[Int(base[index])]
                    index += 1
                    if hash & maskS == 0 { return index }
                }
                pending += stop - start
                if index == count { return nil }
            }
            let start = index
            let stop = Swift.min(count, index + (maximum - pending))
            while index < stop {
                hash = (hash &<< 1) &+ gear[Int(base[index])]
                index += 1
                if hash & maskL == 0 { return index }
            }
            pending += stop - start
            return pending == maximum ? index : nil
        }
        if let cut {
            self.hash = 0
            pendingCount = 0
            return cut
        }
        self.hash = hash
        pendingCount = pending
        return nil
    }

    /// Scans bytes that continue the stream and returns the lengths of the chunks they
    /// complete (the first one counts the bytes of earlier calls that were still open).
    public mutating func update(_ bytes: UnsafeRawBufferPointer) -> [Int] {
        var lengths: [Int] = []
        var offset = 0
        while offset < bytes.count {
            let before = pendingCount
            guard let cut = boundary(in: UnsafeRawBufferPointer(rebasing: bytes[offset...])) else { break }
            lengths.append(before + cut)
            offset += cut
        }
        return lengths
    }

    /// Scans bytes that continue the stream; see ``update(_:)-(UnsafeRawBufferPointer)``.
    public mutating func update(_ bytes: some Sequence<UInt8>) -> [Int] {
        if let lengths = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) { return lengths }
        return Array(bytes).withUnsafeBytes { update($0) }
    }

    /// Ends the stream: the length of the last chunk (the bytes still open), or nil when there
    /// are none. The chunker is then at the start of a new stream.
    public mutating func finish() -> Int? {
        let last = pendingCount
        pendingCount = 0
        hash = 0
        return last > 0 ? last : nil
    }

    /// The chunk lengths of a whole byte sequence.
    public static func chunkLengths(of bytes: some Sequence<UInt8>, parameters: Parameters = .default) -> [Int] {
        var chunker = FastCDC(parameters: parameters)
        var lengths = chunker.update(bytes)
        if let last = chunker.finish() { lengths.append(last) }
        return lengths
    }
}
