// SPDX-License-Identifier: Apache-2.0

/// Something a wire dictionary's members are written to, absent optionals left out: a
/// ``JSONValue`` object (``WireWriter``) or JSON text (``WireObjectWriter``). A type that writes
/// its members once, generically, has both forms from one list.
package protocol WireMemberWriter {
    /// Sets a string member unless nil.
    mutating func set(_ key: String, _ value: String?)
    /// Sets an integer member unless nil.
    mutating func set(_ key: String, _ value: Int64?)
    /// Sets a boolean member unless nil.
    mutating func set(_ key: String, _ value: Bool?)
    /// Sets a member to a JSON value unless nil.
    mutating func set(_ key: String, _ value: JSONValue?)
    /// Sets a member to JSON text (the caller vouches that it is one JSON value).
    mutating func set(_ key: String, rawJSON text: String)
    /// Sets a member to a nested object whose members `body` writes.
    mutating func set(_ key: String, object body: (inout Self) -> Void)
}

/// Writes one JSON object straight into a byte buffer, member by member: the response form of
/// ``WireWriter``, without building a ``JSONValue`` tree.
///
/// It takes the caller's buffer for its life (``init(appendingTo:)``) and gives it back, with the
/// closed object appended, in ``finish(into:)``; neither copies the bytes.
package struct WireObjectWriter: WireMemberWriter {
    private var out: [UInt8] = []
    private var empty = true

    /// Starts an object at the end of `out` (which is empty until ``finish(into:)``).
    package init(appendingTo out: inout [UInt8]) {
        swap(&self.out, &out)
        self.out.append(UInt8(ascii: "{"))
    }

    /// Closes the object and hands the buffer back to `out`.
    package mutating func finish(into out: inout [UInt8]) {
        self.out.append(UInt8(ascii: "}"))
        swap(&self.out, &out)
    }

    /// Writes a member's key and its colon; the caller appends the value.
    private mutating func key(_ key: String) {
        if !empty { out.append(UInt8(ascii: ",")) }
        empty = false
        JSONValue.writeString(key, to: &out)
        out.append(UInt8(ascii: ":"))
    }

    /// Sets a string member unless nil.
    package mutating func set(_ key: String, _ value: String?) {
        guard let value else { return }
        self.key(key)
        JSONValue.writeString(value, to: &out)
    }

    /// Sets an integer member unless nil.
    package mutating func set(_ key: String, _ value: Int64?) {
        guard let value else { return }
        self.key(key)
        out.append(contentsOf: String(value).utf8)
    }

    /// Sets a boolean member unless nil.
    package mutating func set(_ key: String, _ value: Bool?) {
        guard let value else { return }
        self.key(key)
        out.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Sets a member to a (small) JSON value unless nil.
    package mutating func set(_ key: String, _ value: JSONValue?) {
        guard let value else { return }
        self.key(key)
        value.write(to: &out)
    }

    /// Sets a member to JSON text written as it is (the caller vouches that it is one JSON value).
    package mutating func set(_ key: String, rawJSON text: String) {
        self.key(key)
        out.append(contentsOf: text.utf8)
    }

    /// Sets a member to a nested object, written by `body`.
    package mutating func set(_ key: String, object body: (inout WireObjectWriter) -> Void) {
        self.key(key)
        var nested = WireObjectWriter(appendingTo: &out)
        body(&nested)
        nested.finish(into: &out)
    }
}
