// SPDX-License-Identifier: Apache-2.0

extension Sequence {
    /// `map` whose transform awaits (store transactions' primitives are `async`): the elements
    /// are transformed one after another, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var mapped: [T] = []
        mapped.reserveCapacity(underestimatedCount)
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
