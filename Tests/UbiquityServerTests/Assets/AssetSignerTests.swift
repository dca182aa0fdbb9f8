// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

struct AssetSignerTests {
    let signer = AssetSigner(key: SymmetricKey(size: .bits256))
    let binding = AssetTestSupport.binding
    let checksum = AssetTestSupport.checksum([1, 2, 3])

    func reason(_ body: () throws -> Void) -> AssetSignatureError.Reason? {
        do {
            try body()
            return nil
        } catch let error as AssetSignatureError {
            return error.reason
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test("upload tokens carry their binding and expire after 15 minutes")
    func uploadTokens() throws {
        let now = Date()
        let token = signer.makeUploadToken(for: binding, now: now)
        #expect(token.utf8.allSatisfy { $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "=") })
        let verified = try signer.verifyUploadToken(token, now: now.addingTimeInterval(14 * 60))
        #expect(verified.binding == binding)
        #expect(signer.makeUploadToken(for: binding, now: now) != token)  // each URL is unique
        let expired = reason { _ = try signer.verifyUploadToken(token, now: now.addingTimeInterval(15 * 60 + 1)) }
        guard case .expired = expired else {
            Issue.record("expected expired, got \(String(describing: expired))")
            return
        }
        #expect(try signer.verifyUploadToken(token, now: now.addingTimeInterval(3600), allowExpired: true).binding == binding)
    }

    @Test("altered or foreign tokens are forged; garbage is malformed; one kind is not another")
    func forgeries() {
        let token = signer.makeUploadToken(for: binding)
        var bytes = Array(token.utf8)
        bytes[10] = bytes[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(reason { _ = try signer.verifyUploadToken(String(decoding: bytes, as: UTF8.self)) } == .forged)
        let other = AssetSigner(key: SymmetricKey(size: .bits256))
        #expect(reason { _ = try other.verifyUploadToken(token) } == .forged)
        #expect(reason { _ = try signer.verifyUploadToken("hello") } == .malformed)
        #expect(reason { _ = try signer.verifyUploadToken("") } == .malformed)
        #expect(reason { _ = try signer.verifyUploadToken("a+b/c=") } == .malformed)
        #expect(reason { _ = try signer.openReceipt(token) } == .wrongKind)
        let receipt = signer.makeReceipt(for: binding, fileChecksum: checksum, size: 3)
        #expect(reason { _ = try signer.verifyUploadToken(receipt) } == .wrongKind)
        #expect(reason { _ = try signer.verifyDownloadToken(receipt) } == .wrongKind)
    }

    @Test("receipts are bound to the field, the record, the checksum and the size, for 24 hours")
    func receipts() throws {
        let now = Date()
        let receipt = signer.makeReceipt(for: binding, fileChecksum: checksum, size: 3, now: now)
        let verified = try signer.verifyReceipt(receipt, expected: binding, fileChecksum: checksum, size: 3, now: now.addingTimeInterval(3600))
        #expect(verified.fileChecksum == checksum && verified.size == 3 && verified.binding == binding)

        func mismatch(_ change: (inout AssetBinding) -> Void, checksum: String? = nil, size: Int64 = 3) -> AssetSignatureError.Reason? {
            var expected = binding
            change(&expected)
            return reason { _ = try signer.verifyReceipt(receipt, expected: expected, fileChecksum: checksum ?? self.checksum, size: size, now: now) }
        }
        #expect(mismatch { $0.fieldName = "thumbnail" } == .mismatch(field: "fieldName"))
        #expect(mismatch { $0.recordType = "Other" } == .mismatch(field: "recordType"))
        #expect(mismatch { $0.recordName = "photo-2" } == .mismatch(field: "recordName"))
        #expect(mismatch { $0.zoneName = "Albums" } == .mismatch(field: "zoneName"))
        #expect(mismatch { $0.owner = "_ffff" } == .mismatch(field: "owner"))
        #expect(mismatch { $0.scope = .public } == .mismatch(field: "scope"))
        #expect(mismatch { $0.environment = .production } == .mismatch(field: "environment"))
        #expect(mismatch { $0.container = "iCloud.other" } == .mismatch(field: "container"))
        #expect(mismatch({ _ in }, checksum: AssetTestSupport.checksum([9])) == .mismatch(field: "fileChecksum"))
        #expect(mismatch({ _ in }, size: 4) == .mismatch(field: "size"))
        let late = reason { _ = try signer.verifyReceipt(receipt, expected: binding, fileChecksum: checksum, size: 3, now: now.addingTimeInterval(24 * 3600 + 1)) }
        guard case .expired = late else {
            Issue.record("expected expired, got \(String(describing: late))")
            return
        }
        // A receipt whose upload named no record fits any record of that field.
        var anyRecord = binding
        anyRecord.recordName = nil
        let open = signer.makeReceipt(for: anyRecord, fileChecksum: checksum, size: 3, now: now)
        var elsewhere = binding
        elsewhere.recordName = "photo-9"
        _ = try signer.verifyReceipt(open, expected: elsewhere, fileChecksum: checksum, size: 3, now: now)
        // Forged receipts.
        let forged = AssetSigner(key: SymmetricKey(size: .bits256)).makeReceipt(for: binding, fileChecksum: checksum, size: 3, now: now)
        #expect(reason { _ = try signer.verifyReceipt(forged, expected: binding, fileChecksum: checksum, size: 3, now: now) } == .forged)
    }

    @Test("download tokens expire when told")
    func downloadTokens() throws {
        let now = Date()
        let token = signer.makeDownloadToken(fileChecksum: checksum, size: 3, container: "c", expiresAt: now.addingTimeInterval(60))
        let verified = try signer.verifyDownloadToken(token, now: now)
        #expect(verified.fileChecksum == checksum && verified.size == 3 && verified.container == "c")
        let late = reason { _ = try signer.verifyDownloadToken(token, now: now.addingTimeInterval(61)) }
        guard case .expired = late else {
            Issue.record("expected expired, got \(String(describing: late))")
            return
        }
    }

    @Test("the service checks receipts against the stored content and names the field in its errors")
    func serviceReceipts() async throws {
        let (store, folder) = try AssetTestSupport.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let service = AssetService(store: store, key: SymmetricKey(size: .bits256), logger: AssetTestSupport.logger)
        let info = try await store.write([1, 2, 3])
        let receipt = service.signer.makeReceipt(for: binding, fileChecksum: info.fileChecksum, size: 3)
        let asset = WireAsset(fileChecksum: info.fileChecksum, size: 3, receipt: receipt)
        #expect(try await service.verifyReceipt(asset, binding: binding) == info)
        var other = binding
        other.fieldName = "thumbnail"
        await #expect { try await service.verifyReceipt(asset, binding: other) } throws: { error in
            guard let wire = error as? WireError else { return false }
            return wire.code == .badRequest && wire.reason.hasPrefix("field thumbnail:")
        }
        await #expect(throws: WireError.self) { try await service.verifyReceipt(WireAsset(fileChecksum: info.fileChecksum, size: 3), binding: binding) }
        // Re-referencing gives a receipt for the other field.
        let again = try await service.rereferenceReceipt(fileChecksum: info.fileChecksum, size: 3, binding: other)
        #expect(try await service.verifyReceipt(again, binding: other) == info)
        await #expect(throws: WireError.self) { try await service.rereferenceReceipt(fileChecksum: AssetTestSupport.checksum([7]), size: 1, binding: other) }
        // Content no longer stored.
        _ = try await store.collectGarbage(referenced: [], olderThan: Date(timeIntervalSinceNow: 60))
        await #expect(throws: WireError.self) { try await service.verifyReceipt(asset, binding: binding) }
        let url = service.downloadURL(fileChecksum: info.fileChecksum, size: 3, container: "c", baseURL: "https://example.org/")
        #expect(url.hasPrefix("https://example.org/assets/1/download/") && url.hasSuffix("/${f}"))
        #expect(service.uploadURL(for: binding, baseURL: "http://h:1").hasPrefix("http://h:1/assets/1/upload/"))
    }
}
