/// Uniform type identifiers from file-name extensions, and their conformance trees
/// (`kMDItemContentType`, `kMDItemContentTypeTree`), following Apple's system-declared types.
public enum ContentType {
    /// The identifier for folders.
    public static let folder = "public.folder"
    /// The identifier for files whose extension is unknown.
    public static let data = "public.data"

    /// The type identifier of an item named `name`: `public.folder` for folders, the declared
    /// type of the extension (case-insensitive), or `dyn.` + the extension for unknown ones
    /// (Apple makes a dynamic type the same way), `public.data` without an extension.
    public static func identifier(forFileName name: String, isDirectory: Bool) -> String {
        if isDirectory { return folder }
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex,
              name.index(after: dot) != name.endIndex else { return data }
        let ext = name[name.index(after: dot)...].lowercased()
        return byExtension[ext] ?? data
    }

    /// `identifier` followed by every type it conforms to, nearest first
    /// (`public.plain-text, public.text, public.data, public.item, public.content`).
    public static func tree(of identifier: String) -> [String] {
        var result: [String] = []
        var queue = [identifier]
        while !queue.isEmpty {
            let type = queue.removeFirst()
            if result.contains(type) { continue }
            result.append(type)
            queue.append(contentsOf: parents[type] ?? (type == "public.item" ? [] : ["public.data"]))
        }
        return result
    }

    /// Every known identifier whose tree contains `ancestor` (used to turn a tree comparison into
    /// an `IN` over the content-type column).
    public static func identifiers(conformingTo ancestor: String) -> [String] {
        var known = Set(byExtension.values)
        known.formUnion(parents.keys)
        known.insert(data)
        return known.filter { tree(of: $0).contains(ancestor) }.sorted()
    }

    /// Extension → identifier.
    public static let byExtension: [String: String] = [
        "txt": "public.plain-text", "text": "public.plain-text", "md": "net.daringfireball.markdown",
        "markdown": "net.daringfireball.markdown", "rtf": "public.rtf", "html": "public.html",
        "htm": "public.html", "xml": "public.xml", "json": "public.json", "yaml": "public.yaml",
        "yml": "public.yaml", "csv": "public.comma-separated-values-text",
        "tsv": "public.tab-separated-values-text", "log": "com.apple.log",
        "swift": "public.swift-source", "c": "public.c-source", "h": "public.c-header",
        "cpp": "public.c-plus-plus-source", "cc": "public.c-plus-plus-source",
        "hpp": "public.c-plus-plus-header", "m": "public.objective-c-source",
        "py": "public.python-script", "rb": "public.ruby-script", "pl": "public.perl-script",
        "sh": "public.shell-script", "js": "com.netscape.javascript-source",
        "ts": "com.microsoft.typescript", "java": "com.sun.java-source", "go": "public.go-source",
        "rs": "public.rust-source", "css": "public.css",
        "pdf": "com.adobe.pdf", "png": "public.png", "jpg": "public.jpeg", "jpeg": "public.jpeg",
        "gif": "com.compuserve.gif", "heic": "public.heic", "tif": "public.tiff",
        "tiff": "public.tiff", "bmp": "com.microsoft.bmp", "svg": "public.svg-image",
        "webp": "org.webmproject.webp", "mp3": "public.mp3", "m4a": "com.apple.m4a-audio",
        "wav": "com.microsoft.waveform-audio", "aiff": "public.aiff-audio", "flac": "org.xiph.flac",
        "mp4": "public.mpeg-4", "m4v": "com.apple.m4v-video", "mov": "com.apple.quicktime-movie",
        "avi": "public.avi", "zip": "public.zip-archive", "gz": "org.gnu.gnu-zip-archive",
        "tar": "public.tar-archive", "bz2": "public.bzip2-archive", "xz": "org.tukaani.xz-archive",
        "doc": "com.microsoft.word.doc", "docx": "org.openxmlformats.wordprocessingml.document",
        "xls": "com.microsoft.excel.xls", "xlsx": "org.openxmlformats.spreadsheetml.sheet",
        "ppt": "com.microsoft.powerpoint.ppt",
        "pptx": "org.openxmlformats.presentationml.presentation",
        "odt": "org.oasis-open.opendocument.text", "ods": "org.oasis-open.opendocument.spreadsheet",
        "pages": "com.apple.iwork.pages.sffpages", "numbers": "com.apple.iwork.numbers.sffnumbers",
        "key": "com.apple.iwork.keynote.sffkey", "plist": "com.apple.property-list",
        "ics": "com.apple.ical.ics", "vcf": "public.vcard", "epub": "org.idpf.epub-container",
        "sqlite": "org.sqlite.sqlite3", "db": "public.database",
    ]

    /// Identifier → the identifiers it directly conforms to.
    public static let parents: [String: [String]] = [
        "public.item": [], "public.content": [], "public.data": ["public.item"],
        "public.folder": ["public.directory"], "public.directory": ["public.item"],
        "public.text": ["public.data", "public.content"], "public.plain-text": ["public.text"],
        "net.daringfireball.markdown": ["public.plain-text"], "public.rtf": ["public.text"],
        "public.html": ["public.text"], "public.xml": ["public.text"], "public.json": ["public.text"],
        "public.yaml": ["public.text"], "public.delimited-values-text": ["public.text"],
        "public.comma-separated-values-text": ["public.delimited-values-text"],
        "public.tab-separated-values-text": ["public.delimited-values-text"],
        "com.apple.log": ["public.plain-text"], "public.source-code": ["public.plain-text"],
        "public.script": ["public.source-code"], "public.swift-source": ["public.source-code"],
        "public.c-source": ["public.source-code"], "public.c-header": ["public.source-code"],
        "public.c-plus-plus-source": ["public.source-code"],
        "public.c-plus-plus-header": ["public.source-code"],
        "public.objective-c-source": ["public.source-code"], "public.python-script": ["public.script"],
        "public.ruby-script": ["public.script"], "public.perl-script": ["public.script"],
        "public.shell-script": ["public.script"], "com.netscape.javascript-source": ["public.script"],
        "com.microsoft.typescript": ["public.source-code"], "com.sun.java-source": ["public.source-code"],
        "public.go-source": ["public.source-code"], "public.rust-source": ["public.source-code"],
        "public.css": ["public.text"],
        "public.composite-content": ["public.content"], "com.adobe.pdf": ["public.data", "public.composite-content"],
        "public.image": ["public.data", "public.content"], "public.png": ["public.image"],
        "public.jpeg": ["public.image"], "com.compuserve.gif": ["public.image"],
        "public.heic": ["public.image"], "public.tiff": ["public.image"], "com.microsoft.bmp": ["public.image"],
        "public.svg-image": ["public.image", "public.xml"], "org.webmproject.webp": ["public.image"],
        "public.audiovisual-content": ["public.data", "public.content"],
        "public.audio": ["public.audiovisual-content"], "public.mp3": ["public.audio"],
        "com.apple.m4a-audio": ["public.audio"], "com.microsoft.waveform-audio": ["public.audio"],
        "public.aiff-audio": ["public.audio"], "org.xiph.flac": ["public.audio"],
        "public.movie": ["public.audiovisual-content"], "public.mpeg-4": ["public.movie"],
        "com.apple.m4v-video": ["public.movie"], "com.apple.quicktime-movie": ["public.movie"],
        "public.avi": ["public.movie"], "public.archive": ["public.data"],
        "public.zip-archive": ["public.archive"], "org.gnu.gnu-zip-archive": ["public.archive"],
        "public.tar-archive": ["public.archive"], "public.bzip2-archive": ["public.archive"],
        "org.tukaani.xz-archive": ["public.archive"],
        "com.microsoft.word.doc": ["public.data", "public.composite-content"],
        "org.openxmlformats.wordprocessingml.document": ["public.zip-archive", "public.composite-content"],
        "com.microsoft.excel.xls": ["public.data", "public.composite-content"],
        "org.openxmlformats.spreadsheetml.sheet": ["public.zip-archive", "public.composite-content"],
        "com.microsoft.powerpoint.ppt": ["public.data", "public.composite-content"],
        "org.openxmlformats.presentationml.presentation": ["public.zip-archive", "public.composite-content"],
        "org.oasis-open.opendocument.text": ["public.zip-archive", "public.composite-content"],
        "org.oasis-open.opendocument.spreadsheet": ["public.zip-archive", "public.composite-content"],
        "com.apple.iwork.pages.sffpages": ["public.composite-content", "public.data"],
        "com.apple.iwork.numbers.sffnumbers": ["public.composite-content", "public.data"],
        "com.apple.iwork.keynote.sffkey": ["public.composite-content", "public.data"],
        "com.apple.property-list": ["public.data"], "com.apple.ical.ics": ["public.text"],
        "public.vcard": ["public.text"], "org.idpf.epub-container": ["public.zip-archive", "public.composite-content"],
        "public.database": ["public.data"], "org.sqlite.sqlite3": ["public.database"],
    ]
}
