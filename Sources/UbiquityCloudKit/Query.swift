// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// A query for records of one type (`CKQuery`): a predicate in NSPredicate's format-string
/// language and sort descriptors, translated to CloudKit Web Services' `filterBy` and
/// `sortBy` (the mapping is in `docs/cloudkit-client.md` and on ``Query/Predicate``).
///
/// ```swift
/// var query = Query(recordType: "Artist", predicate: "name BEGINSWITH %@ AND age > %d", "Mei", 30)
/// query.sortDescriptors = [.init(key: "age", ascending: false)]
/// let (matches, cursor) = try await database.records(matching: query)
/// ```
///
/// A predicate that CloudKit cannot run (an `OR`, `LIKE`, a malformed string) makes running
/// the query fail with ``CloudKitError/Code/invalidArguments`` naming the column; build a
/// ``Predicate`` first (it throws) to find out earlier.
public struct Query: Sendable, CustomStringConvertible {
    /// A translated predicate: the filters CloudKit ANDs together.
    public struct Predicate: Sendable, Hashable, CustomStringConvertible {
        /// The format string it was made from.
        public let predicateFormat: String
        let filters: [WireFilter]

        /// Parses `format`, filling `%@` (any record value, `Record.ID`, `Record`, or an
        /// array), `%K` (a field name), `%d` (an integer) and `%f` (a number) from `arguments`.
        /// Throws ``CloudKitError/Code/invalidArguments`` with the column of the problem.
        public init(format: String, _ arguments: any Sendable...) throws {
            try self.init(format: format, argumentArray: arguments)
        }

        /// Parses `format` with the arguments as an array.
        public init(format: String, argumentArray: [any Sendable]) throws {
            var parser = try CloudKitPredicateParser(format: format, arguments: argumentArray)
            filters = try parser.parse()
            predicateFormat = format
        }

        /// Translates an `NSPredicate`: `NSPredicate(value: true)` and predicates whose
        /// `predicateFormat` is in the supported subset (block predicates are not).
        public init(_ predicate: NSPredicate) throws {
            try self.init(format: (predicate as any PredicateFormatReading).predicateFormat, argumentArray: [])
        }

        /// The conversions of `format`'s `%` substitutions in order, without the `%` (`@`, `K`,
        /// `d`, `ld`, `f`…), for callers that hold arguments as text (the command line).
        public static func formatSpecifiers(in format: String) throws -> [String] {
            var lexer = PredicateLexer(format)
            do {
                return try lexer.tokenize().compactMap { token in
                    if case .format(let letters) = token.kind { return letters }
                    return nil
                }
            } catch {
                throw CloudKitError(.invalidArguments, error.message)
            }
        }

        /// Matches every record (`NSPredicate(value: true)`).
        public static let `true` = Predicate(format: "TRUEPREDICATE", filters: [])

        init(format: String, filters: [WireFilter]) {
            predicateFormat = format
            self.filters = filters
        }

        /// The format string.
        public var description: String { predicateFormat }
    }

    /// A sort order: by a field (or a system key such as `creationDate`), or by distance of a
    /// LOCATION field from a point (`CKLocationSortDescriptor`).
    public struct SortDescriptor: Sendable, Hashable, CustomStringConvertible {
        /// The field or system key.
        public var key: String
        /// Smallest first (nearest first for a distance sort).
        public var ascending: Bool
        /// For a distance sort: the point distances are measured from.
        public var relativeLocation: Location?

        /// Sorts by `key`.
        public init(key: String, ascending: Bool = true) {
            self.key = key
            self.ascending = ascending
        }

        /// Sorts by the distance of the LOCATION field `key` from `location`.
        public static func distance(key: String, from location: Location, ascending: Bool = true) -> SortDescriptor {
            var descriptor = SortDescriptor(key: key, ascending: ascending)
            descriptor.relativeLocation = location
            return descriptor
        }

        /// `key ascending|descending`.
        public var description: String {
            "\(key) \(ascending ? "ascending" : "descending")" + (relativeLocation.map { " from \($0)" } ?? "")
        }
    }

    /// The type of the records to find.
    public let recordType: Record.RecordType
    /// The predicate's format string.
    public let predicateFormat: String
    /// The sort order, most significant first.
    public var sortDescriptors: [SortDescriptor] = []
    let translated: Result<[WireFilter], CloudKitError>

    /// A query with a translated predicate.
    public init(recordType: Record.RecordType, predicate: Predicate) {
        self.recordType = recordType
        predicateFormat = predicate.predicateFormat
        translated = .success(predicate.filters)
    }

    /// A query with a format string and its arguments, as `NSPredicate(format:)` takes them.
    /// An untranslatable predicate is reported when the query runs (or by ``validate()``).
    public init(recordType: Record.RecordType, predicate format: String, _ arguments: any Sendable...) {
        self.init(recordType: recordType, format: format, argumentArray: arguments)
    }

    /// A query with a format string and its arguments as an array.
    public init(recordType: Record.RecordType, format: String, argumentArray: [any Sendable]) {
        self.recordType = recordType
        predicateFormat = format
        do {
            translated = .success(try Predicate(format: format, argumentArray: argumentArray).filters)
        } catch {
            translated = .failure(CloudKitError.wrap(error))
        }
    }

    /// A query with an `NSPredicate` (`NSPredicate(value: true)` matches every record).
    public init(recordType: Record.RecordType, predicate: NSPredicate) {
        self.init(recordType: recordType, format: (predicate as any PredicateFormatReading).predicateFormat, argumentArray: [])
    }

    /// Throws the predicate's translation error, if any.
    public func validate() throws { _ = try translated.get() }

    /// `Artist where name BEGINSWITH "Mei"`.
    public var description: String {
        "\(recordType) where \(predicateFormat)" + (sortDescriptors.isEmpty ? "" : " sorted by \(sortDescriptors.map(\.description).joined(separator: ", "))")
    }

    /// The query dictionary.
    func wire() throws -> WireQuery {
        guard !recordType.isEmpty else { throw CloudKitError(.invalidArguments, "a query needs a record type") }
        let sorts = try sortDescriptors.map { descriptor -> WireSort in
            let key: WireFieldKey
            do {
                key = try CloudKitPredicateParser.fieldKey(descriptor.key, column: 1)
            } catch {
                throw CloudKitError(.invalidArguments, "sort descriptor '\(descriptor.key)': not a field name or a system key")
            }
            return WireSort(key: key, ascending: descriptor.ascending, relativeLocation: descriptor.relativeLocation?.wire)
        }
        return WireQuery(recordType: recordType, filterBy: try translated.get(), sortBy: sorts)
    }
}

/// Reads `NSPredicate.predicateFormat`, which swift-corelibs-foundation marks deprecated
/// because it cannot parse format strings; for `NSPredicate(value:)` it is still exact
/// (`TRUEPREDICATE`, `FALSEPREDICATE`), and block predicates fail translation.
protocol PredicateFormatReading {
    var predicateFormat: String { get }
}

extension NSPredicate: PredicateFormatReading {}
