// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A strict ISO 8601 date-time parser for the dates of signed requests. Formatting is
/// Foundation's (`ServerToServerSignature.formatDate(_:)`); parsing is not, because Foundation's
/// `ISO8601FormatStyle` is lenient where a signature check must not be: it takes 2016-02-30 as
/// March 1st, 24:00 as the next day, and ignores text after the time zone.
enum ISO8601Timestamp {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM|±HH)`; `T` and `Z` in either case.
    /// Nil for anything else, including out-of-range fields and missing time zones.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 64 else { return nil }
        var index = 0

        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for offset in 0..<count {
                let byte = bytes[index + offset]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ chars: Character...) -> Bool {
            guard index < bytes.count, chars.contains(where: { $0.asciiValue == bytes[index] }) else { return false }
            index += 1
            return true
        }

        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
              expect("T", "t"), let hour = digits(2), expect(":"), let minute = digits(2), expect(":"),
              let second = digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysInMonth(month, year: year)).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }

        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: ",") {
            index += 1
            var numerator = 0
            var denominator = 1
            var count = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if count < 9 {  // nanoseconds are plenty; further digits are read and ignored
                    numerator = numerator * 10 + Int(bytes[index] - 0x30)
                    denominator *= 10
                }
                index += 1
                count += 1
            }
            guard count > 0 else { return nil }
            fraction = Double(numerator) / Double(denominator)
        }

        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHours = digits(2) else { return nil }
            var offsetMinutes = 0
            if index < bytes.count {
                _ = expect(":")
                guard let minutes = digits(2) else { return nil }
                offsetMinutes = minutes
            }
            guard offsetHours <= 23, offsetMinutes <= 59 else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        default:
            return nil
        }
        guard index == bytes.count else { return nil }

        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds)).addingTimeInterval(fraction)
    }

    private static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
