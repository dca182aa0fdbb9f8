import Foundation

/// Date helpers for predicates: ISO 8601 parsing (deterministic, no formatter state) and the
/// dynamic dates `now()` and `$time.today`.
enum PredicateDates {
    /// Seconds from 1970-01-01 to 2001-01-01 (Apple's reference date).
    static let referenceOffset: Double = 978_307_200

    /// Parses `YYYY-MM-DD`, optionally followed by `T` (or a space) and `hh:mm[:ss[.fraction]]`,
    /// optionally followed by `Z` or `±hh[:mm]`. Without a zone the time is UTC.
    static func parseISO8601(_ text: String) -> Date? {
        let s = Array(text.trimmingCharacters(in: .whitespaces).utf8)
        var i = 0
        func digits(_ count: Int) -> Int? {
            guard i + count <= s.count else { return nil }
            var value = 0
            for k in i..<(i + count) {
                guard (48...57).contains(s[k]) else { return nil }
                value = value * 10 + Int(s[k] - 48)
            }
            i += count
            return value
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < s.count, s[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")),
              let day = digits(2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        var seconds = Double(daysFromCivil(year: year, month: month, day: day)) * 86_400
        if i < s.count, s[i] == UInt8(ascii: "T") || s[i] == UInt8(ascii: "t") || s[i] == UInt8(ascii: " ") {
            i += 1
            guard let hour = digits(2), hour < 24, expect(UInt8(ascii: ":")), let minute = digits(2), minute < 60
            else { return nil }
            seconds += Double(hour * 3600 + minute * 60)
            if expect(UInt8(ascii: ":")) {
                guard let second = digits(2), second < 61 else { return nil }
                seconds += Double(second)
                if i < s.count, s[i] == UInt8(ascii: ".") || s[i] == UInt8(ascii: ",") {
                    i += 1
                    var fraction = 0.0, scale = 0.1, any = false
                    while i < s.count, (48...57).contains(s[i]) {
                        fraction += Double(s[i] - 48) * scale
                        scale /= 10
                        i += 1
                        any = true
                    }
                    guard any else { return nil }
                    seconds += fraction
                }
            }
            if i < s.count {
                if s[i] == UInt8(ascii: "Z") || s[i] == UInt8(ascii: "z") {
                    i += 1
                } else if s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
                    let sign: Double = s[i] == UInt8(ascii: "+") ? 1 : -1
                    i += 1
                    guard let hours = digits(2), hours < 24 else { return nil }
                    var minutes = 0
                    if expect(UInt8(ascii: ":")) {
                        guard let m = digits(2), m < 60 else { return nil }
                        minutes = m
                    } else if i < s.count {
                        guard let m = digits(2), m < 60 else { return nil }
                        minutes = m
                    }
                    seconds -= sign * Double(hours * 3600 + minutes * 60)
                }
            }
        }
        guard i == s.count else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The start of today (local time zone) plus `days` days.
    static func today(offsetDays days: Int, now: Date) -> Date {
        let calendar = Calendar.current
        let start = calendar.startOfDay(for: now)
        return calendar.date(byAdding: .day, value: days, to: start) ?? start.addingTimeInterval(Double(days) * 86_400)
    }
}
