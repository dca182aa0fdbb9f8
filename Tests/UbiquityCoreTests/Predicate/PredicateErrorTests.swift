import Foundation
import Testing
@testable import UbiquityCore

@Suite struct PredicateErrorTests {
    @Test(arguments: [
        ("kMDItemFSName == ", "predicate: column 18: expected a value after '==', found end of input"),
        ("kMDItemFoo == 1", "predicate: column 1: unknown attribute 'kMDItemFoo'"),
        ("kMDItemFSSize LIKE 'a'", "predicate: column 15: LIKE is a string operator, but kMDItemFSSize (a number) is compared"),
        ("kMDItemFSName > 3", "predicate: column 15: cannot compare kMDItemFSName (a string) with a number"),
        ("kMDItemIsDirectory < 1", "predicate: column 20: '<' needs numbers, dates or strings, but kMDItemIsDirectory (a Boolean) is compared"),
        ("kMDItemFSName == 'abc", "predicate: column 18: unterminated string starting with \"'\""),
        ("(kMDItemFSSize > 1", "predicate: column 19: expected ')' to close the '(' at column 1, found end of input"),
        ("kMDItemFSSize > 1)", "predicate: column 18: unexpected ')' without a matching '('"),
        ("kMDItemFSSize 1", "predicate: column 15: expected an operator such as '==', '<', CONTAINS, LIKE or IN after 'kMDItemFSSize', found '1'"),
        ("kMDItemFSSize > 1 AND", "predicate: column 22: expected an attribute or a value at the start of a comparison, found end of input"),
        ("kMDItemFSSize > 1 kMDItemFSSize", "predicate: column 19: expected AND, OR or end of input, found 'kMDItemFSSize'"),
        ("kMDItemFSName ==[x] 'a'", "predicate: column 18: expected the modifier c, d or cd after '[', found 'x'"),
        ("kMDItemFSSize BETWEEN {1}", "predicate: column 23: BETWEEN needs an aggregate of two values, such as {1, 10}; found 1"),
        ("kMDItemFSSize BETWEEN 3", "predicate: column 23: BETWEEN needs an aggregate of two values, such as {1, 10}; found a number"),
        ("kMDItemFSSize IN 3", "predicate: column 18: IN needs an aggregate such as {'a', 'b'} or a string, found a number"),
        ("kMDItemFSCreationDate > CAST('yesterday', 'NSDate')", "predicate: column 30: bad date \"yesterday\"; expected ISO 8601 such as '2024-05-01T12:00:00Z' or seconds since 2001-01-01"),
        ("kMDItemFSCreationDate > CAST(1, 'NSString')", "predicate: column 33: expected 'NSDate' (the only supported CAST type), found string 'NSString'"),
        ("kMDItemFSName MATCHES '('", "predicate: column 23: invalid regular expression"),
        ("ANY kMDItemFSName == 'a'", "predicate: column 1: ANY needs an array attribute such as kMDItemContentTypeTree, found kMDItemFSName (a string)"),
        ("kMDItemFSSize ==[c] 3", "predicate: column 15: the [c] modifier applies only to strings"),
        ("kMDItemFSName == 'a' & kMDItemFSSize > 1", "predicate: column 22: expected '&&', found '&'"),
        ("kMDItemFSName == #", "predicate: column 18: expected a name after '#'"),
        ("kMDItemFSName == 'a' AND ()", "predicate: column 27: expected a predicate after '(', found ')'"),
        ("", "predicate: column 1: expected a predicate, found end of input"),
        ("kMDItemFSSize == 12abc", "predicate: column 18: malformed number '12a'"),
        ("kMDItemFSName == \"\\u12\"", "predicate: column 19: expected four hexadecimal digits after '\\u'"),
        ("kMDItemFSName IN {'a' 'b'}", "predicate: column 23: expected ',' or '}' in the aggregate at column 18, found string 'b'"),
        ("kMDItemFSName == $time.week", "predicate: column 18: unsupported '$time.week'"),
        ("kMDItemFSName == %s", "predicate: column 18: unsupported format specifier '%s'"),
        ("kMDItemFSName == ~", "predicate: column 18: unexpected character '~'"),
        ("kMDItemContentTypeTree BEGINSWITH kMDItemContentTypeTree", "predicate: column 35: the array attribute kMDItemContentTypeTree must be on the left side"),
        ("kMDItemFSName == {'a'}", "predicate: column 18: '==' cannot compare with an aggregate; use IN"),
    ])
    func malformed(format: String, expected: String) {
        let message = parseError(format)
        #expect(message?.hasPrefix(expected) == true, "\(format): got \(message ?? "no error")")
    }

    @Test func argumentErrors() {
        #expect(parseError("kMDItemFSName == %@") == "predicate: column 18: '%@' needs argument 1, but 0 were given")
        #expect(parseError("%K == %@ AND %K == %@", "name", "a", "size")
            == "predicate: column 20: '%@' needs argument 4, but 3 were given")
        #expect(parseError("kMDItemFSName == 'a'", "extra") == "predicate: column 21: 1 arguments given, but the format uses only 0")
        #expect(parseError("%K == 1", 5) == "predicate: column 1: argument 1 for '%K': expected an attribute name (String), got Int")
        #expect(parseError("%K == 1", "kMDItemNope") == "predicate: column 1: argument 1 for '%K': unknown attribute 'kMDItemNope'")
        #expect(parseError("kMDItemFSSize > %d", "7") == "predicate: column 17: argument 1 for '%d': expected an integer, got String")
        #expect(parseError("kMDItemFSSize > %d", true) == "predicate: column 17: argument 1 for '%d': expected an integer, got Bool")
        #expect(parseError("kMDItemFSSize > %f", Double.nan) == "predicate: column 17: argument 1 for '%f': NaN is not a comparable number")
        #expect(parseError("kMDItemFSSize > %@", Data()) == "predicate: column 17: argument 1 for '%@': unsupported type Data; use String, a number, Bool, Date, URL, an array of those, or nil")
        #expect(parseError("kMDItemFSName > %@", 3) == "predicate: column 15: cannot compare kMDItemFSName (a string) with a number")
        #expect(parseError("kMDItemFSCreationDate > CAST(%@, 'NSDate')", "soon")?.hasPrefix("predicate: column 30: bad date") == true)
    }

    @Test func errorsAreInvalidArgument() {
        do {
            _ = try QueryPredicate(format: "kMDItemFSName ==")
            Issue.record("no error")
        } catch let error as UbiquityError {
            #expect(error.code == .invalidArgument)
        } catch {
            Issue.record("wrong error type \(error)")
        }
    }

    @Test func unsubstitutedVariablesFailClearly() throws {
        struct Schema: PredicateSQLSchema {
            func column(for attribute: MetadataAttribute) -> String? { "c" }
        }
        let predicate = try QueryPredicate(format: "kMDItemFSName == $NAME")
        #expect(!predicate.evaluate(with: PredicateTestItem.file("x")))
        do {
            _ = try predicate.sql(using: Schema())
            Issue.record("no error")
        } catch let error as UbiquityError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("$NAME has no value"))
        }
    }

    @Test func unstoredAttributeIsUnsupported() throws {
        struct Schema: PredicateSQLSchema {
            func column(for attribute: MetadataAttribute) -> String? { attribute == .fsName ? "name" : nil }
        }
        #expect(try QueryPredicate(format: "kMDItemFSName == 'a'").sql(using: Schema()).sql == "(name = ?)")
        do {
            _ = try QueryPredicate(format: "kMDItemFSSize == 1").sql(using: Schema())
            Issue.record("no error")
        } catch let error as UbiquityError {
            #expect(error.code == .unsupported)
        }
    }
}
