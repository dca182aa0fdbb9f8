// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import UbiquityCore

/// An element of an S3 XML response (`ListBucketResult`, `Error`, `InitiateMultipartUploadResult`…),
/// read with Foundation's `XMLParser`: its name, its text and its child elements. S3's answers
/// are small and flat, so a tree is all the reading they need.
package struct S3XML: Sendable, Hashable {
    /// The element's name, without a namespace prefix.
    package var name: String
    /// The element's text (its character data, trimmed of surrounding white space).
    package var text: String
    /// The child elements, in order.
    package var children: [S3XML]

    /// Makes an element.
    package init(name: String, text: String = "", children: [S3XML] = []) {
        self.name = name
        self.text = text
        self.children = children
    }

    /// The first child named `name`.
    package subscript(_ name: String) -> S3XML? { children.first { $0.name == name } }

    /// Every child named `name`.
    package func all(_ name: String) -> [S3XML] { children.filter { $0.name == name } }

    /// Parses a document; its root element.
    /// - Throws: `io` when the bytes are not XML.
    package static func parse(_ bytes: some Sequence<UInt8>) throws -> S3XML {
        let reader = Reader()
        let parser = XMLParser(data: Data(bytes))
        parser.delegate = reader
        guard parser.parse(), let root = reader.root else {
            throw UbiquityError(.io, "the object store answered with XML that could not be read: \(parser.parserError.map { "\($0)" } ?? "no root element")")
        }
        return root
    }

    /// Text with `&`, `<` and `>` escaped, to put in an element.
    package static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var stack: [S3XML] = []
        var root: S3XML?

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
            stack.append(S3XML(name: local))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            guard var element = stack.popLast() else { return }
            element.text = element.text.trimmingCharacters(in: .whitespacesAndNewlines)
            if stack.isEmpty {
                root = element
            } else {
                stack[stack.count - 1].children.append(element)
            }
        }
    }
}
