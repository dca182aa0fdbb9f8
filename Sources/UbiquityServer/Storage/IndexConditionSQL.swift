// SPDX-License-Identifier: Apache-2.0
import UbiquityWire

/// Translates an `IndexCondition` to a `WHERE` clause over the `record_index` table
/// (`field`, `number`, `text`, `latitude`, `longitude`), or over a column of `records` for the
/// system fields kept there, shared by both stores. A `NEAR` box is answered from each store's
/// spatial index of the location rows: SQLite's R*Tree `record_locations` (one rectangle per
/// location row, keyed by its rowid), PostgreSQL's GiST index over `point(longitude, latitude)`.
package enum IndexConditionSQL {
    /// The SQL dialect: how parameters are spelled and how the spatial index is asked.
    package enum Dialect: Sendable {
        /// `?` parameters; the R*Tree `record_locations`.
        case sqlite
        /// `$n` parameters; `point(longitude, latitude) <@ box(…)` (the `record_index_space` GiST index).
        case postgres

        /// The n-th parameter (1-based).
        func placeholder(_ number: Int) -> String {
            switch self {
            case .sqlite: return "?"
            case .postgres: return "$\(number)"
            }
        }
    }

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
    package static func recordClause(_ condition: IndexCondition, table: String = "records", dialect: Dialect,
                                    startIndex: Int) -> (String, [IndexValue]) {
        guard let column = column(for: condition.field).map({ "\(table).\($0)" }) else {
            let (clause, values) = clause(condition, dialect: dialect, startIndex: startIndex)
            return ("\(table).id IN (SELECT record FROM record_index WHERE \(clause))", values)
        }
        var values: [IndexValue] = []
        func next(_ value: IndexValue) -> String {
            values.append(value)
            return dialect.placeholder(startIndex + values.count)
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

    /// The clause and its values, in `dialect`; `startIndex` is the number of parameters before
    /// this clause.
    package static func clause(_ condition: IndexCondition, dialect: Dialect, startIndex: Int) -> (String, [IndexValue]) {
        var values: [IndexValue] = []
        func next(_ value: IndexValue) -> String {
            values.append(value)
            return dialect.placeholder(startIndex + values.count)
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
            // across the antimeridian: two boxes, east and west of it
            let spans: [(Double, Double)] = minLongitude <= maxLongitude ? [(minLongitude, maxLongitude)] : [(minLongitude, 180), (-180, maxLongitude)]
            switch dialect {
            case .sqlite:
                // rectangles overlapping the box (the R*Tree keeps 32-bit floats, rounded outwards:
                // overlap, not containment, keeps every point inside)
                let boxes = spans.map { span -> String in
                    "SELECT id FROM record_locations WHERE max_latitude >= \(next(.number(minLatitude))) AND min_latitude <= \(next(.number(maxLatitude)))"
                        + " AND max_longitude >= \(next(.number(span.0))) AND min_longitude <= \(next(.number(span.1)))"
                }
                return ("field = \(fieldPlaceholder) AND rowid IN (\(boxes.joined(separator: " UNION ALL ")))", values)
            case .postgres:
                let boxes = spans.map { span -> String in
                    "point(longitude, latitude) <@ box(point(\(next(.number(span.0)))::DOUBLE PRECISION, \(next(.number(minLatitude)))::DOUBLE PRECISION), "
                        + "point(\(next(.number(span.1)))::DOUBLE PRECISION, \(next(.number(maxLatitude)))::DOUBLE PRECISION))"
                }
                return ("field = \(fieldPlaceholder) AND latitude IS NOT NULL AND (\(boxes.joined(separator: " OR ")))", values)
            }
        }
    }
}
