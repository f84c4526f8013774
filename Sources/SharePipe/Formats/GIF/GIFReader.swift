import CSharePipe

/// A giflib decoder on one source, open for the duration of a closure and closed after it. Thin: one
/// method per shim call, record by record (never DGifSlurp), with every failure thrown as
/// `SharePipeError` naming the file and, once frames have started, the frame.
final class GIFReader {
    /// What comes next. `unknown` carries where and what the byte is that starts no block.
    enum Record { case image, extensionBlock, trailer, endOfData, unknown(String) }

    private let handle: OpaquePointer
    let file: String
    let screen: sp_gif_screen
    /// Prefixed to error messages ("frame 3"), set by the stream walker.
    var context: String?

    private init(handle: OpaquePointer, screen: sp_gif_screen, file: String) {
        self.handle = handle
        self.screen = screen
        self.file = file
    }

    /// Opens `source`, reads the screen descriptor, runs `body`, and always closes giflib and the file.
    static func with<T>(_ source: ImageSource, _ body: (GIFReader) throws -> T) throws -> T {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        var screen = sp_gif_screen()
        switch source {
        case .file(let path):
            try checkShim(
                sp_gif_reader_open_file(path, &handle, &screen, &message), message, file: path, phase: .header)
            defer { sp_gif_reader_free(handle) }
            return try body(GIFReader(handle: handle!, screen: screen, file: path))
        case .bytes(let bytes):
            return try bytes.withUnsafeBufferPointer { buffer in
                try checkShim(
                    sp_gif_reader_open_memory(buffer.baseAddress, buffer.count, &handle, &screen, &message),
                    message, file: source.displayName, phase: .header)
                defer { sp_gif_reader_free(handle) }
                return try body(GIFReader(handle: handle!, screen: screen, file: source.displayName))
            }
        }
    }

    var screenSize: PixelSize { PixelSize(width: Int(screen.width), height: Int(screen.height)) }

    var globalPalette: GIFPalette? {
        guard screen.global_color_count > 0, let colors = screen.global_colors else { return nil }
        return GIFPalette(
            rgb: Array(UnsafeBufferPointer(start: colors, count: Int(screen.global_color_count) * 3)),
            sorted: screen.global_sorted != 0)
    }

    var offset: Int { sp_gif_reader_offset(handle) }

    func nextRecord() throws -> Record {
        var record = SP_GIF_RECORD_TRAILER
        var message = shimMessageBuffer()
        try check(sp_gif_reader_next_record(handle, &record, &message), message, phase: .header)
        switch record {
        case SP_GIF_RECORD_IMAGE: return .image
        case SP_GIF_RECORD_EXTENSION: return .extensionBlock
        case SP_GIF_RECORD_END_OF_DATA: return .endOfData
        case SP_GIF_RECORD_UNKNOWN: return .unknown(shimText(message))
        default: return .trailer
        }
    }

    /// Reads one whole extension: its label and its data sub-blocks (payloads without length bytes).
    func readExtension() throws -> (label: Int, blocks: [[UInt8]]) {
        var label: Int32 = 0
        var block: UnsafePointer<UInt8>?
        var length: Int32 = 0
        var message = shimMessageBuffer()
        try check(sp_gif_reader_extension_start(handle, &label, &block, &length, &message), message, phase: .header)
        var blocks: [[UInt8]] = []
        guard let first = block else { return (Int(label), blocks) }
        blocks.append(Array(UnsafeBufferPointer(start: first, count: Int(length))))
        while true {
            let status = sp_gif_reader_extension_next(handle, &block, &length, &message)
            if status == SP_ERR_END { break }
            try check(status, message, phase: .header)
            if let block { blocks.append(Array(UnsafeBufferPointer(start: block, count: Int(length)))) }
        }
        return (Int(label), blocks)
    }

    /// Reads an image descriptor and its local colour table; the LZW data follows.
    func readImageDescriptor() throws -> (rect: GIFRect, interlaced: Bool, localPalette: GIFPalette?) {
        var image = sp_gif_image()
        var message = shimMessageBuffer()
        try check(sp_gif_reader_image(handle, &image, &message), message, phase: .header)
        let rect = GIFRect(
            left: Int(image.left), top: Int(image.top), width: Int(image.width), height: Int(image.height))
        var palette: GIFPalette?
        if image.local_color_count > 0, let colors = image.local_colors {
            palette = GIFPalette(
                rgb: Array(UnsafeBufferPointer(start: colors, count: Int(image.local_color_count) * 3)),
                sorted: image.local_sorted != 0)
        }
        return (rect, image.interlaced != 0, palette)
    }

    /// Decodes the next stored row of the current image into `row` (exactly the image width).
    func readLine(into row: UnsafeMutableBufferPointer<UInt8>) throws {
        var message = shimMessageBuffer()
        try check(sp_gif_reader_read_line(handle, row.baseAddress, Int32(row.count), &message), message, phase: .decode)
    }

    /// Skips the current image's LZW data without decoding it.
    func skipImageData() throws {
        var message = shimMessageBuffer()
        try check(sp_gif_reader_skip_image(handle, &message), message, phase: .decode)
    }

    private func check(_ status: sp_status, _ message: [CChar], phase: SharePipeError.ReadPhase) throws {
        guard status != SP_OK, status != SP_ERR_END else { return }
        let prefix = context.map { Array("\($0): ".utf8CString.dropLast()) } ?? []
        try checkShim(status, prefix + message, file: file, phase: phase)
    }
}

/// Walks a GIF front to back and sorts what it finds into the two levels: screen, global palette, loop
/// count and metadata into the container; image descriptors with the Graphics Control Extension before
/// them into frames. Holds nothing per frame, so memory does not grow with the frame count.
///
/// A Graphics Control Extension applies to the next image descriptor (as in browsers, even when a plain
/// text extension comes between); when several come before one image, the last wins.
///
/// Lenient where browsers are: a missing trailer, or a byte after a complete frame that starts no block
/// (junk, or a second GIF appended to a first without its trailer), ends the stream after the frames read
/// so far, with a warning; only those frames count. Before the first frame such a byte is an error.
final class GIFStream {
    let reader: GIFReader
    private(set) var container: GIFContainer
    /// Frames read so far (index of the current frame + 1).
    private(set) var frameCount = 0
    /// Recoverable oddities (missing trailer, a byte that starts no block, malformed control extension,
    /// extra loop extensions, frames without a colour table).
    var warnings: [String] {
        guard framesWithoutColorTable > 0 else { return recorded }
        return recorded + [
            "\(framesWithoutColorTable) of \(frameCount) frame(s) have no colour table (neither local "
                + "nor global): drawn opaque black, as browsers do"
        ]
    }
    private var recorded: [String] = []
    private var framesWithoutColorTable = 0
    /// Whether the stream ended without its ';' trailer.
    private(set) var missingTrailer = false
    private var pendingControl: GIFGraphicsControl?
    private var currentFrame: GIFFrame?
    private var frameDataConsumed = true
    private var loopExtensions = 0

    init(_ reader: GIFReader) {
        self.reader = reader
        container = GIFContainer(
            screenSize: reader.screenSize, globalPalette: reader.globalPalette,
            backgroundIndex: Int(reader.screen.background_index),
            colorResolution: Int(reader.screen.color_resolution),
            aspectByte: Int(reader.screen.aspect_byte), loopCount: nil, metadata: [])
    }

    /// Reads records up to and including the next image descriptor; nil at the end of the stream. The
    /// previous frame's image data is skipped if the caller did not read it.
    func nextFrame() throws -> GIFFrame? {
        if !frameDataConsumed { try skipRows() }
        reader.context = frameCount == 0 ? nil : "after frame \(frameCount - 1)"
        while true {
            switch try reader.nextRecord() {
            case .trailer:
                return nil
            case .endOfData:
                missingTrailer = true
                recorded.append("the GIF has no trailer (data ends after frame \(frameCount - 1))")
                return nil
            case .unknown(let what):
                guard frameCount > 0 else {
                    throw SharePipeError.corrupt(file: reader.file, phase: .header, reason: what)
                }
                recorded.append(
                    "the GIF ends at \(what); kept the \(frameCount) frame(s) before it, "
                        + "as browsers do")
                return nil
            case .extensionBlock:
                try readExtension()
            case .image:
                reader.context = "frame \(frameCount)"
                let descriptor = try reader.readImageDescriptor()
                let frame = GIFFrame(
                    rect: descriptor.rect, localPalette: descriptor.localPalette,
                    interlaced: descriptor.interlaced, control: pendingControl)
                pendingControl = nil
                if frame.localPalette == nil && container.globalPalette == nil { framesWithoutColorTable += 1 }
                frameCount += 1
                currentFrame = frame
                frameDataConsumed = false
                return frame
            }
        }
    }

    /// Decodes the current frame's rows, calling `body(y, row)` with `y` the frame row (interlaced rows are
    /// numbered where they belong) and `row` the frame's palette indices.
    func readRows(_ body: (Int, UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        guard let frame = currentFrame, !frameDataConsumed else { return }
        frameDataConsumed = true
        if frame.rect.isEmpty {
            try reader.skipImageData()
            return
        }
        var row = [UInt8](repeating: 0, count: frame.rect.width)
        let order = frame.interlaced ? GIFInterlace.rows(height: frame.rect.height) : []
        for stored in 0..<frame.rect.height {
            try row.withUnsafeMutableBufferPointer { try reader.readLine(into: $0) }
            let y = frame.interlaced ? order[stored] : stored
            try row.withUnsafeBufferPointer { try body(y, $0) }
        }
    }

    /// Skips the current frame's image data without decoding it.
    func skipRows() throws {
        guard !frameDataConsumed else { return }
        frameDataConsumed = true
        try reader.skipImageData()
    }

    private func readExtension() throws {
        let (label, blocks) = try reader.readExtension()
        switch label {
        case 0xF9:
            if let payload = blocks.first, let control = GIFGraphicsControl(payload: payload) {
                pendingControl = control
            } else {
                recorded.append("ignored a malformed graphics control extension before frame \(frameCount)")
            }
        case 0xFE:
            container.metadata.append(.comment(blocks.flatMap { $0 }))
        case 0xFF:
            let identifier = blocks.first ?? []
            let data = Array(blocks.dropFirst())
            if GIFApplication.isLoop(identifier) {
                loopExtensions += 1
                if loopExtensions == 1 {
                    container.loopCount = GIFApplication.loopCount(data)
                } else {
                    recorded.append("ignored loop extension #\(loopExtensions) (the first one's count is kept)")
                }
            } else {
                container.metadata.append(GIFApplication.metadata(identifier: identifier, data: data))
            }
        default:
            container.metadata.append(
                .other(
                    tag: GIFApplication.otherTag(label: label, identifier: nil),
                    data: GIFApplication.subBlockStream(blocks)))
        }
    }
}

/// Application extensions and other GIF extensions ↔ format-neutral metadata blocks.
enum GIFApplication {
    static let netscape = Array("NETSCAPE2.0".utf8)
    static let animexts = Array("ANIMEXTS1.0".utf8)
    static let xmp = Array("XMP DataXMP".utf8)
    static let icc = Array("ICCRGBG1012".utf8)
    /// XMP in GIF is stored raw (not in sub-blocks) followed by this 257-byte "magic trailer" (0x01, 0xFF,
    /// 0xFE ... 0x00) that makes any sub-block reader land on the terminator.
    static let xmpMagicTrailer: [UInt8] = [0x01] + (0...255).reversed().map { UInt8($0) }

    static func isLoop(_ identifier: [UInt8]) -> Bool { identifier == netscape || identifier == animexts }

    /// The loop count in a NETSCAPE2.0 data sub-block (id 1, then the count little-endian); nil if absent.
    static func loopCount(_ data: [[UInt8]]) -> Int? {
        for block in data where block.count >= 3 && block[0] == 1 {
            return Int(block[1]) | Int(block[2]) << 8
        }
        return nil
    }

    /// Sub-blocks as a stream: [length][payload] for each, no terminator.
    static func subBlockStream(_ blocks: [[UInt8]]) -> [UInt8] {
        var stream: [UInt8] = []
        for block in blocks where !block.isEmpty {
            stream.append(UInt8(block.count))
            stream += block
        }
        return stream
    }

    /// `bytes` cut into sub-blocks of at most 255 bytes, as a stream.
    static func chunked(_ bytes: [UInt8]) -> [UInt8] {
        var stream: [UInt8] = []
        stream.reserveCapacity(bytes.count + bytes.count / 255 + 1)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + 255)
            stream.append(UInt8(end - start))
            stream += bytes[start..<end]
            start = end
        }
        return stream
    }

    /// The metadata block for an application extension (other than the loop extension).
    static func metadata(identifier: [UInt8], data: [[UInt8]]) -> MetadataBlock {
        if identifier == xmp {
            // The packet is the raw byte stream, sub-block lengths included, minus the magic trailer.
            let raw = subBlockStream(data)
            if raw.count >= xmpMagicTrailer.count, Array(raw.suffix(xmpMagicTrailer.count)) == xmpMagicTrailer {
                return .xmp(Array(raw.dropLast(xmpMagicTrailer.count)))
            }
            return .xmp(data.flatMap { $0 })  // a writer that chunked the packet like ordinary data
        }
        if identifier == icc { return .icc(data.flatMap { $0 }) }
        return .other(tag: otherTag(label: 0xFF, identifier: identifier), data: subBlockStream([identifier] + data))
    }

    /// Tag of an extension kept as `.other`: "GIF:" + label in hex, then the application identifier.
    static func otherTag(label: Int, identifier: [UInt8]?) -> String {
        let hex = String(label, radix: 16, uppercase: true)
        let name =
            identifier.map { ":" + String(decoding: $0.map { (0x20...0x7E).contains($0) ? $0 : 0x3F }, as: UTF8.self) }
            ?? ""
        return "GIF:" + (hex.count < 2 ? "0" + hex : hex) + name
    }

    /// The extension (label, sub-block stream) that writes `block` into a GIF; nil for blocks a GIF cannot hold.
    static func extensionFor(_ block: MetadataBlock) -> (label: Int, stream: [UInt8])? {
        switch block {
        case .comment(let text):
            return text.isEmpty ? nil : (0xFE, chunked(text))
        case .xmp(let packet):
            // Raw packet plus magic trailer; the stream must parse as sub-blocks ending exactly at its end.
            let raw = packet + xmpMagicTrailer
            guard parsesAsSubBlocks(raw) else { return (0xFF, subBlockStream([xmp]) + chunked(packet)) }
            return (0xFF, subBlockStream([xmp]) + raw)
        case .icc(let profile):
            return profile.isEmpty ? nil : (0xFF, subBlockStream([icc]) + chunked(profile))
        case .other(let tag, let data):
            guard tag.hasPrefix("GIF:"), tag.count >= 6,
                let label = Int(tag.dropFirst(4).prefix(2), radix: 16), parsesAsSubBlocks(data)
            else { return nil }
            return (label, data)
        case .exif, .extendedXMP, .iptc, .pngText, .embeddedVideo:
            return nil
        }
    }

    static func parsesAsSubBlocks(_ stream: [UInt8]) -> Bool {
        var position = 0
        while position < stream.count {
            let length = Int(stream[position])
            if length == 0 { return false }
            position += 1 + length
        }
        return position == stream.count
    }
}
