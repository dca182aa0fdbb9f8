// SPDX-License-Identifier: Apache-2.0
import UbiquityWire

/// Translates an `IndexCondition` to a `WHERE` clause over the `record_index` table
/// (`field`, `number`, `text`, `latitude`, `longitude`), or over a column of `records` for the
/// system fields kept there, shared by both stores.
package enum IndexConditionSQL {
    /// The `records` column of a system field that is not in the index (`RecordIndexEntry.columnSystemFields`).
    package static func column(for field: String) -> String? {
        switch WireSystemField(name: field) {
        case .recordName: return "name"
        case .createdTimestamp: return "created_at"
        case .modifiedTimestamp: return "modified_at"
        case .createdUserRecordName: return "created_by"
        case .modifiedUserRecordName: return "modified_by"
        default: return nil
        }
    }

    /// The condition on a row of `records` (named `table`): a column comparison for the system
    /// fields kept in columns, else `table.id IN (SELECT record FROM record_index WHERE …)`.
    package static func recordClause(_ condition: IndexCondition, table: String = "records", placeholder: (Int) -> String,
                                    startIndex: Int) -> (String, [IndexValue]) {
        guard let column = column(for: condition.field).map({ "\(table).\($0)" }) else {
            let (clause, values) = clause(condition, placeholder: placeholder, startIndex: startIndex)
            return ("\(table).id IN (SELECT record FROM record_index WHERE \(clause))", values)
        }
        var values: [IndexValue] = []
        func next(_ value: IndexValue) -> String {
            values.append(value)
            return placeholder(startIndex + values.count)
        }
        // Index conditions carry text cut to the index's length; a column holds the whole text, so
        // a comparison with text that may have been cut could miss matches: it is left to the
        // engine's exact filter (the condition must give a superset).
        func mayBeCut(_ value: IndexValue) -> Bool {
            if case .text(let text) = value { return text.utf8.count >= RecordIndexEntry.maximumTextBytes - 3 }
            return false
        }
        switch condition {
        case .compare(_, let comparison, let value):
            if mayBeCut(value) { return ("1 = 1", []) }
            return ("\(column) \(comparison.rawValue) \(next(value))", values)
        case .anyOf(_, let options):
            if options.contains(where: mayBeCut) { return ("1 = 1", []) }
            if options.isEmpty { return ("1 = 0", []) }
            return ("\(column) IN (\(options.map { next($0) }.joined(separator: ", ")))", values)
        case .prefix(_, let prefix):
            return ("\(column) >= \(next(.text(prefix))) AND \(column) < \(next(.text(prefix + "\u{10FFFF}")))", values)
        case .box:
            return ("1 = 0", [])
        }
    }

    /// The clause and its values. `placeholder(n)` spells the n-th parameter (`?` for SQLite,
    /// `$n` for PostgreSQL); `startIndex` is the number of parameters before this clause.
    package static func clause(_ condition: IndexCondition, placeholder: (Int) -> String, startIndex: Int) -> (String, [IndexValue]) {
        var values: [IndexValue] = []
        func next(_ value: IndexValue) -> String {
            values.append(value)
            return placeholder(startIndex + values.count)
        }
        switch condition {
        case .compare(let field, let comparison, let value):
            let fieldPlaceholder = next(.text(field))
            switch value {
            case .number: return ("field = \(fieldPlaceholder) AND number \(comparison.rawValue) \(next(value))", values)
            case .text: return ("field = \(fieldPlaceholder) AND text \(comparison.rawValue) \(next(value))", values)
            }
        case .anyOf(let field, let options):
            let fieldPlaceholder = next(.text(field))
            let numbers = options.filter { if case .number = $0 { return true } else { return false } }
            let texts = options.filter { if case .text = $0 { return true } else { return false } }
            var parts: [String] = []
            if !numbers.isEmpty { parts.append("number IN (\(numbers.map { next($0) }.joined(separator: ", ")))") }
            if !texts.isEmpty { parts.append("text IN (\(texts.map { next($0) }.joined(separator: ", ")))") }
            if parts.isEmpty { parts.append("1 = 0") }
            return ("field = \(fieldPlaceholder) AND (\(parts.joined(separator: " OR ")))", values)
        case .prefix(let field, let prefix):
            // text >= prefix AND text < prefix + U+10FFFF: a range the (field, text) index serves.
            let fieldPlaceholder = next(.text(field))
            return ("field = \(fieldPlaceholder) AND text >= \(next(.text(prefix))) AND text < \(next(.text(prefix + "\u{10FFFF}")))", values)
        case .box(let field, let minLatitude, let maxLatitude, let minLongitude, let maxLongitude):
            let fieldPlaceholder = next(.text(field))
            var clause = "field = \(fieldPlaceholder) AND latitude >= \(next(.number(minLatitude))) AND latitude <= \(next(.number(maxLatitude)))"
            if minLongitude <= maxLongitude {
                clause += " AND longitude >= \(next(.number(minLongitude))) AND longitude <= \(next(.number(maxLongitude)))"
            } else {
                clause += " AND (longitude >= \(next(.number(minLongitude))) OR longitude <= \(next(.number(maxLongitude))))"
            }
            return (clause, values)
        }
    }
}
