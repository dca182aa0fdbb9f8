import Testing
@testable import UbiquityIndex

@Suite struct IndexSmokeTests {
    @Test func batchStartsEmpty() { #expect(WatchBatch().isEmpty) }
}
