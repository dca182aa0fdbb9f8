// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import UbiquityCore

/// `memmem` through ``ByteSearch``: found anywhere (start, middle, end), not found when absent
/// or longer than the text, an empty needle is always found, non-ASCII text searched by bytes.
@Suite struct ByteSearchTests {
    @Test func findsTheNeedleWhereverItIs() {
        #expect(ByteSearch.contains(#"{"a":{"type":"ASSETID","value":1}}"#, "ASSETID"))
        #expect(ByteSearch.contains("ASSETID_LIST", "ASSETID"))
        #expect(ByteSearch.contains("x-ASSETID", "ASSETID"))
        #expect(ByteSearch.contains("/a//b", "//"))
        #expect(ByteSearch.contains("é//ü", "//"))
        #expect(ByteSearch.contains("anything", ""))
        #expect(ByteSearch.contains("", ""))
    }

    @Test func missesWhatIsNotThere() {
        #expect(!ByteSearch.contains(#"{"a":{"type":"STRING","value":"ASSET"}}"#, "ASSETID"))
        #expect(!ByteSearch.contains("/a/b/c", "//"))
        #expect(!ByteSearch.contains("/", "//"))
        #expect(!ByteSearch.contains("", "x"))
    }
}
