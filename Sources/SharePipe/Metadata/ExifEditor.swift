/// Reads and edits an Exif TIFF structure in place.
///
/// Edits never re-lay out the structure: maker notes hold absolute offsets that a re-layout would break.
/// Instead a removed block (the GPS IFD, the thumbnail IFD and its JPEG) is unlinked and its bytes are
/// zeroed, and bytes past the last structure still referenced are cut off. Every offset is bounds-checked
/// and every IFD is visited once, so hostile offsets or IFD loops end in an error, not a crash or a hang.
struct ExifEditor {
    enum Tag {
        static let orientation: UInt16 = 0x0112
        static let make: UInt16 = 0x010F
        static let exifIFD: UInt16 = 0x8769
        static let gpsIFD: UInt16 = 0x8825
        static let interopIFD: UInt16 = 0xA005
        static let thumbnailOffset: UInt16 = 0x0201
        static let thumbnailLength: UInt16 = 0x0202
    }

    struct FormatError: Error { let reason: String }

    /// One 12-byte IFD entry.
    struct Entry {
        let tag: UInt16
        let type: UInt16
        let count: Int
        /// Where the 4-byte value-or-offset field is.
        let fieldPosition: Int
        /// Byte size of the value.
        let byteSize: Int
        /// Where the value lives: the field itself (≤ 4 bytes) or the offset it holds.
        let valuePosition: Int
    }

    private(set) var bytes: [UInt8]
    let littleEndian: Bool

    init(tiff: [UInt8]) throws {
        guard tiff.count >= 8 else { throw FormatError(reason: "Exif too short") }
        if tiff[0] == 0x49 && tiff[1] == 0x49 && tiff[2] == 0x2A && tiff[3] == 0 {
            littleEndian = true
        } else if tiff[0] == 0x4D && tiff[1] == 0x4D && tiff[2] == 0 && tiff[3] == 0x2A {
            littleEndian = false
        } else {
            throw FormatError(reason: "Exif has no TIFF header")
        }
        bytes = tiff
        _ = try entries(ofIFDAt: ifd0Offset)
    }

    // MARK: Reading

    func u16(_ position: Int) throws -> UInt16 {
        guard position >= 0, position + 2 <= bytes.count else { throw FormatError(reason: "offset \(position) outside Exif") }
        let a = UInt16(bytes[position]), b = UInt16(bytes[position + 1])
        return littleEndian ? a | b << 8 : a << 8 | b
    }

    func u32(_ position: Int) throws -> Int {
        guard position >= 0, position + 4 <= bytes.count else { throw FormatError(reason: "offset \(position) outside Exif") }
        let b = (0..<4).map { UInt32(bytes[position + $0]) }
        let value = littleEndian ? b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24 : b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]
        return Int(value)
    }

    var ifd0Offset: Int { (try? u32(4)) ?? 0 }

    static func typeSize(_ type: UInt16) -> Int {
        switch type {
        case 1, 2, 6, 7: return 1
        case 3, 8: return 2
        case 4, 9, 11, 13: return 4
        case 5, 10, 12: return 8
        default: return 1
        }
    }

    /// The entries of the IFD at `offset`, bounds-checked.
    func entries(ofIFDAt offset: Int) throws -> [Entry] {
        guard offset >= 8 else { throw FormatError(reason: "IFD offset \(offset) points into the header") }
        let count = Int(try u16(offset))
        guard offset + 2 + count * 12 <= bytes.count else {
            throw FormatError(reason: "IFD at \(offset) runs past the end of Exif")
        }
        var result: [Entry] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            let position = offset + 2 + index * 12
            let tag = try u16(position)
            let type = try u16(position + 2)
            let valueCount = try u32(position + 4)
            let (size, overflow) = valueCount.multipliedReportingOverflow(by: ExifEditor.typeSize(type))
            guard !overflow else { throw FormatError(reason: "entry \(tag) has an impossible size") }
            let valuePosition = size <= 4 ? position + 8 : try u32(position + 8)
            result.append(Entry(tag: tag, type: type, count: valueCount, fieldPosition: position + 8,
                                byteSize: size, valuePosition: valuePosition))
        }
        return result
    }

    /// The offset of the IFD that follows the one at `offset` (0 for none).
    func nextIFD(after offset: Int) throws -> Int {
        let count = Int(try u16(offset))
        return try u32(offset + 2 + count * 12)
    }

    func entry(_ tag: UInt16, inIFDAt offset: Int) -> Entry? {
        (try? entries(ofIFDAt: offset))?.first { $0.tag == tag }
    }

    /// Reads a SHORT or LONG entry's first value.
    func integerValue(_ entry: Entry) -> Int? {
        switch entry.type {
        case 3: return (try? u16(entry.valuePosition)).map(Int.init)
        case 4, 13: return try? u32(entry.valuePosition)
        default: return nil
        }
    }

    /// The stored orientation value, if the tag is present.
    var orientation: Int? {
        entry(Tag.orientation, inIFDAt: ifd0Offset).flatMap(integerValue)
    }

    var hasGPS: Bool { entry(Tag.gpsIFD, inIFDAt: ifd0Offset) != nil }

    var hasThumbnail: Bool { ((try? nextIFD(after: ifd0Offset)) ?? 0) != 0 }

    /// An ASCII tag of IFD0 (Make, Model), for reports and tests.
    func string(_ tag: UInt16) -> String? {
        guard let entry = entry(tag, inIFDAt: ifd0Offset), entry.type == 2,
              entry.valuePosition >= 0, entry.valuePosition + entry.byteSize <= bytes.count else { return nil }
        let raw = bytes[entry.valuePosition..<entry.valuePosition + entry.byteSize].prefix { $0 != 0 }
        return String(decoding: raw, as: UTF8.self)
    }

    // MARK: Editing

    /// Sets the orientation to 1 (top-left) where the tag exists.
    mutating func resetOrientation() {
        guard let entry = entry(Tag.orientation, inIFDAt: ifd0Offset), entry.type == 3, entry.byteSize <= 4 else { return }
        write16(1, at: entry.valuePosition)
    }

    /// Unlinks the GPS IFD from IFD0 and zeroes it and every value it points to.
    mutating func removeGPS() throws {
        guard let pointer = entry(Tag.gpsIFD, inIFDAt: ifd0Offset), let gpsOffset = integerValue(pointer) else { return }
        if let gpsEntries = try? entries(ofIFDAt: gpsOffset) {
            for entry in gpsEntries where entry.byteSize > 4 { zero(entry.valuePosition, entry.byteSize) }
            zero(gpsOffset, 2 + gpsEntries.count * 12 + 4)
        }
        try removeEntry(Tag.gpsIFD, fromIFDAt: ifd0Offset)
    }

    /// Unlinks IFD1 (the thumbnail) and zeroes it and the thumbnail image: it can show the uncropped original.
    mutating func removeThumbnail() throws {
        let ifd0 = ifd0Offset
        let ifd1 = try nextIFD(after: ifd0)
        guard ifd1 != 0 else { return }
        if let thumbnailEntries = try? entries(ofIFDAt: ifd1) {
            let start = thumbnailEntries.first { $0.tag == Tag.thumbnailOffset }.flatMap(integerValue)
            let length = thumbnailEntries.first { $0.tag == Tag.thumbnailLength }.flatMap(integerValue)
            if let start, let length { zero(start, length) }
            for entry in thumbnailEntries where entry.byteSize > 4 { zero(entry.valuePosition, entry.byteSize) }
            zero(ifd1, 2 + thumbnailEntries.count * 12 + 4)
        }
        let count = Int(try u16(ifd0))
        write32(0, at: ifd0 + 2 + count * 12)
    }

    /// Cuts bytes past the end of the last structure still referenced (zeroed blocks at the end go away).
    mutating func trimUnreferencedTail() {
        var end = 8
        var visited = Set<Int>()
        func visit(_ offset: Int) {
            guard offset >= 8, !visited.contains(offset), let list = try? entries(ofIFDAt: offset) else { return }
            visited.insert(offset)
            end = max(end, offset + 2 + list.count * 12 + 4)
            for entry in list {
                if entry.byteSize > 4 { end = max(end, entry.valuePosition + entry.byteSize) }
                if [Tag.exifIFD, Tag.gpsIFD, Tag.interopIFD].contains(entry.tag), let child = integerValue(entry) {
                    visit(child)
                }
                if entry.tag == Tag.thumbnailOffset, let start = integerValue(entry),
                   let length = list.first(where: { $0.tag == Tag.thumbnailLength }).flatMap(integerValue) {
                    end = max(end, start + length)
                }
            }
            if let next = try? nextIFD(after: offset), next != 0 { visit(next) }
        }
        visit(ifd0Offset)
        if end < bytes.count { bytes.removeLast(bytes.count - end) }
    }

    private mutating func removeEntry(_ tag: UInt16, fromIFDAt offset: Int) throws {
        let count = Int(try u16(offset))
        let list = try entries(ofIFDAt: offset)
        guard let index = list.firstIndex(where: { $0.tag == tag }) else { return }
        let entryStart = offset + 2 + index * 12
        let tableEnd = offset + 2 + count * 12 + 4  // entries plus the next-IFD pointer
        guard tableEnd <= bytes.count else { throw FormatError(reason: "IFD runs past the end of Exif") }
        bytes.replaceSubrange(entryStart..<tableEnd - 12, with: bytes[entryStart + 12..<tableEnd])
        zero(tableEnd - 12, 12)
        write16(UInt16(count - 1), at: offset)
    }

    private mutating func zero(_ start: Int, _ length: Int) {
        guard start >= 8, length > 0, start < bytes.count else { return }
        let end = min(bytes.count, start + length)
        for i in start..<end { bytes[i] = 0 }
    }

    private mutating func write16(_ value: UInt16, at position: Int) {
        guard position >= 0, position + 2 <= bytes.count else { return }
        if littleEndian {
            bytes[position] = UInt8(value & 0xFF); bytes[position + 1] = UInt8(value >> 8)
        } else {
            bytes[position] = UInt8(value >> 8); bytes[position + 1] = UInt8(value & 0xFF)
        }
    }

    private mutating func write32(_ value: UInt32, at position: Int) {
        guard position >= 0, position + 4 <= bytes.count else { return }
        for i in 0..<4 {
            let shift = littleEndian ? i * 8 : (3 - i) * 8
            bytes[position + i] = UInt8((value >> UInt32(shift)) & 0xFF)
        }
    }
}
