import Foundation
import GRDB
import UbiquityCore

/// The SQL functions that `QueryPredicate.sql(using:)` emits. Register them on every connection
/// that runs predicate SQL, from `Configuration.prepareDatabase`:
///
/// ```swift
/// var configuration = Configuration()
/// configuration.prepareDatabase { db in PredicateSQLFunctions.register(in: db) }
/// ```
///
/// All are deterministic and call the same code as `QueryPredicate.evaluate(with:)`:
/// - `ubq_match(op TEXT, options TEXT, value TEXT, pattern TEXT) -> INTEGER`: `value op[options]
///   pattern` for `==`, `!=`, `<`…, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`, `MATCHES`
///   (compiled regular expressions are cached); with a NULL argument 0, except that `==` of two
///   NULLs is 1.
/// - `ubq_fold(options TEXT, value TEXT) -> TEXT`: `PredicateStringMatch.fold(value, options:)`.
/// - `ubq_tree(quantifier TEXT, op TEXT, options TEXT, is_list INTEGER, content_type TEXT,
///   values…) -> INTEGER`: a comparison on `ContentType.tree(of: content_type)`.
/// - `ubq_file_url(path TEXT, is_directory INTEGER) -> TEXT`: `QueryPredicate.fileURLString`.
package enum PredicateSQLFunctions {
    /// Adds the functions to `db`.
    package static func register(in db: Database) {
        db.add(function: match)
        db.add(function: fold)
        db.add(function: tree)
        db.add(function: fileURL)
    }

    private static func text(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .string(let s): s
        case .blob(let data): String(decoding: data, as: UTF8.self)
        default: nil
        }
    }

    private static func metadataValue(_ value: DatabaseValue) -> MetadataValue? {
        switch value.storage {
        case .null: nil
        case .int64(let i): .integer(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .blob(let data): .string(String(decoding: data, as: UTF8.self))
        }
    }

    private static func options(_ value: DatabaseValue) -> PredicateStringMatch.Options {
        text(value).flatMap(PredicateStringMatch.Options.init(letters:)) ?? []
    }

    static let match = DatabaseFunction("ubq_match", argumentCount: 4, pure: true) { arguments in
        guard let opName = text(arguments[0]), let op = PredicateOperator(rawValue: opName) else { return 0 }
        // The evaluator's rules, NULL included: NULL == NULL is true, every other test with a NULL is false.
        return PredicateKernel.compareScalar(text(arguments[2]).map(MetadataValue.string), op, options(arguments[1]),
                                             .value(text(arguments[3]).map(MetadataValue.string))) ? 1 : 0
    }

    static let fold = DatabaseFunction("ubq_fold", argumentCount: 2, pure: true) { arguments in
        guard let value = text(arguments[1]) else { return nil }
        return PredicateStringMatch.fold(value, options: options(arguments[0]))
    }

    static let tree = DatabaseFunction("ubq_tree", argumentCount: nil, pure: true) { arguments in
        guard arguments.count >= 5, let opName = text(arguments[1]), let op = PredicateOperator(rawValue: opName)
        else { return 0 }
        let quantifier = text(arguments[0]).flatMap(PredicateComparison.Quantifier.init(rawValue:))
        let isList = Int64.fromDatabaseValue(arguments[3]) == 1
        let left: PredicateKernel.Operand = .value(text(arguments[4]).map { contentType in
            .array(ContentType.tree(of: contentType).map(MetadataValue.string))
        })
        let values = arguments.dropFirst(5).map(metadataValue)
        let right: PredicateKernel.Operand = isList ? .list(Array(values)) : .value(values.first ?? nil)
        return PredicateKernel.compare(quantifier: quantifier, left, op, options(arguments[2]), right) ? 1 : 0
    }

    static let fileURL = DatabaseFunction("ubq_file_url", argumentCount: 2, pure: true) { arguments in
        guard let path = text(arguments[0]) else { return nil }
        return QueryPredicate.fileURLString(forPath: path, isDirectory: Int64.fromDatabaseValue(arguments[1]) == 1)
    }
}

extension SQLValue {
    /// The value as GRDB binds it.
    package var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let i): i.databaseValue
        case .real(let d): d.databaseValue
        case .text(let s): s.databaseValue
        }
    }
}

extension SQLFragment {
    /// The arguments as GRDB `StatementArguments`.
    package var statementArguments: StatementArguments {
        StatementArguments(arguments.map(\.databaseValue))
    }
}
