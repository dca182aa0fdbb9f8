import Testing
@testable import UbiquityStore

@Suite struct StoreSmokeTests {
    @Test func moduleLinks() { _ = UbiquityStore.self }
}
