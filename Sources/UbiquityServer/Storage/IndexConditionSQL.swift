// SPDX-License-Identifier: Apache-2.0

/// Translates an `IndexCondition` to a `WHERE` clause over the `record_index` table
/// (`field`, `number`, `text`, `latitude`, `longitude`), shared by both stores.
public enum IndexConditionSQL {
    /// The clause and its values. `placeholder(n)` spells the n-th parameter (`?` for SQLite,
    /// `$n` for PostgreSQL); `startIndex` is the number of parameters before this clause.
    public static func clause(_ condition: IndexCondition, placeholder: (Int) -> String, startIndex: Int) -> (String, [IndexValue]) {
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
