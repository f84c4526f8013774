/// Reads and edits an Exif TIFF structure in place.
///
/// Edits never re-lay out the structure: maker notes hold absolute offsets that a re-layout would break.
/// Instead a removed block (the GPS IFD, the thumbnail IFD and its JPEG) is unlinked and its bytes are
/// zeroed, and bytes past the last structure still referenced are cut off. Every offset is bounds-checked
/// and every IFD is visited once, so hostile offsets or IFD loops end in an error, not a crash or a hang.
/// The removals are strict: when a GPS or thumbnail block cannot be found for certain they throw, and the
/// metadata policy drops the whole Exif instead of passing it on.
struct ExifEditor {
    enum Tag {
        static let orientation: UInt16 = 0x0112
        static let make: UInt16 = 0x010F
        static let exifIFD: UInt16 = 0x8769
        static let gpsIFD: UInt16 = 0x8825
        static let interopIFD: UInt16 = 0xA005
        static let thumbnailOffset: UInt16 = 0x0201
        static let thumbnailLength: UInt16 = 0x0202
        static let stripOffsets: UInt16 = 0x0111
        static let stripByteCounts: UInt16 = 0x0117
        static let tileOffsets: UInt16 = 0x0144
        static let tileByteCounts: UInt16 = 0x0145
        static let xmp: UInt16 = 0x02BC
        static let iptc: UInt16 = 0x83BB
        static let photoshop: UInt16 = 0x8649
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
        guard position >= 0, position + 2 <= bytes.count else {
            throw FormatError(reason: "offset \(position) outside Exif")
        }
        let a = UInt16(bytes[position]), b = UInt16(bytes[position + 1])
        return littleEndian ? a | b << 8 : a << 8 | b
    }

    func u32(_ position: Int) throws -> Int {
        guard position >= 0, position + 4 <= bytes.count else {
            throw FormatError(reason: "offset \(position) outside Exif")
        }
        let b = (0..<4).map { UInt32(bytes[position + $0]) }
        let value =
            littleEndian ? b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24 : b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]
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
            result.append(
                Entry(
                    tag: tag, type: type, count: valueCount, fieldPosition: position + 8,
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

    /// Whether any IFD reachable from IFD0 links a GPS IFD (some writers put the pointer in the Exif IFD).
    /// A walk that stopped at `maxIFDs` counts as having GPS: it cannot be ruled out.
    var hasGPS: Bool {
        let walked = walk()
        return !walked.complete
            || walked.ifds.contains { $0.role != .gps && $0.entries.contains { $0.tag == Tag.gpsIFD } }
    }

    var hasThumbnail: Bool { ((try? nextIFD(after: ifd0Offset)) ?? 0) != 0 }

    /// Whether an XMP packet is embedded as a TIFF tag (700): it can carry a location too.
    var hasEmbeddedXMP: Bool { hasTag(in: [Tag.xmp]) }

    /// Whether IPTC or Photoshop resources (which can hold IPTC) are embedded as TIFF tags.
    var hasEmbeddedIPTC: Bool { hasTag(in: [Tag.iptc, Tag.photoshop]) }

    private func hasTag(in tags: Set<UInt16>) -> Bool {
        walk().ifds.contains { $0.role != .gps && $0.entries.contains { tags.contains($0.tag) } }
    }

    /// An ASCII tag of IFD0 (Make, Model), for reports and tests.
    func string(_ tag: UInt16) -> String? {
        guard let entry = entry(tag, inIFDAt: ifd0Offset), entry.type == 2,
            entry.valuePosition >= 0, entry.valuePosition + entry.byteSize <= bytes.count
        else { return nil }
        let raw = bytes[entry.valuePosition..<entry.valuePosition + entry.byteSize].prefix { $0 != 0 }
        return String(decoding: raw, as: UTF8.self)
    }

    // MARK: Walking

    /// How an IFD was reached.
    enum Role { case primary, exif, interop, gps, chained }

    /// One IFD reached from IFD0, with its entries as read.
    struct IFD {
        let offset: Int
        let role: Role
        let entries: [Entry]
    }

    /// Most IFDs a walk visits. Real Exif has about six (IFD0, Exif, GPS, Interop, IFD1); IFDs may overlap,
    /// so without a cap a 64 KiB blob of pointers could make a walk parse millions of entries.
    static let maxIFDs = 64

    /// Every IFD reachable from IFD0 through the Exif, GPS and Interop pointers (from any IFD but the GPS
    /// one) and the next-IFD chain of IFD0, each visited once, iteratively: loops end and a long chain
    /// cannot exhaust the stack. `unreadable` lists the pointers that lead nowhere readable; `complete` is
    /// false when the walk stopped at `maxIFDs`.
    func walk() -> (ifds: [IFD], unreadable: [String], complete: Bool) {
        var ifds: [IFD] = []
        var unreadable: [String] = []
        var visited = Set<Int>()
        var queue: [(offset: Int, role: Role)] = [(ifd0Offset, .primary)]
        var index = 0
        while index < queue.count {
            let (offset, role) = queue[index]
            index += 1
            guard visited.insert(offset).inserted else { continue }
            guard ifds.count < ExifEditor.maxIFDs else { return (ifds, unreadable, false) }
            guard let list = try? entries(ofIFDAt: offset) else {
                unreadable.append("IFD at \(offset)")
                continue
            }
            ifds.append(IFD(offset: offset, role: role, entries: list))
            guard role != .gps else { continue }
            for entry in list {
                let child: Role
                switch entry.tag {
                case Tag.exifIFD: child = .exif
                case Tag.gpsIFD: child = .gps
                case Tag.interopIFD: child = .interop
                default: continue
                }
                if let target = integerValue(entry) {
                    queue.append((target, child))
                } else {
                    unreadable.append("pointer \(entry.tag) in IFD at \(offset)")
                }
            }
            if role == .primary || role == .chained {
                switch Result(catching: { try nextIFD(after: offset) }) {
                case .success(0): break
                case .success(let next): queue.append((next, .chained))
                case .failure: unreadable.append("next-IFD pointer of IFD at \(offset)")
                }
            }
        }
        return (ifds, unreadable, true)
    }

    /// All values of a SHORT or LONG entry (strip offsets come in arrays); nil when the values lie outside.
    func integerValues(_ entry: Entry) -> [Int]? {
        guard [3, 4, 13].contains(entry.type), entry.valuePosition >= 0,
            entry.valuePosition + entry.byteSize <= bytes.count
        else { return nil }
        let step = ExifEditor.typeSize(entry.type)
        return (0..<entry.count).compactMap { index in
            let position = entry.valuePosition + index * step
            return step == 2 ? (try? u16(position)).map(Int.init) : try? u32(position)
        }
    }

    /// Ranges of image data an IFD points to: a JPEG thumbnail, or strips and tiles.
    func imageData(in list: [Entry]) -> [(start: Int, length: Int)] {
        var ranges: [(Int, Int)] = []
        func values(_ tag: UInt16) -> [Int] { list.first { $0.tag == tag }.flatMap(integerValues) ?? [] }
        if let start = values(Tag.thumbnailOffset).first, let length = values(Tag.thumbnailLength).first {
            ranges.append((start, length))
        }
        for (offsets, counts) in [(Tag.stripOffsets, Tag.stripByteCounts), (Tag.tileOffsets, Tag.tileByteCounts)] {
            ranges += zip(values(offsets), values(counts)).map { ($0, $1) }
        }
        return ranges
    }

    // MARK: Editing

    /// Sets every orientation tag of IFD0 to 1 (top-left), SHORT or LONG; one stored with any other type
    /// (which some readers would still honour) is removed.
    mutating func resetOrientation() {
        let ifd0 = ifd0Offset
        guard let list = try? entries(ofIFDAt: ifd0) else { return }
        var oddlyTyped = false
        for entry in list where entry.tag == Tag.orientation {
            switch entry.type {
            case 3: write16(1, at: entry.valuePosition)
            case 4, 13: write32(1, at: entry.valuePosition)
            default: oddlyTyped = true
            }
        }
        if oddlyTyped {
            try? removeEntries(Tag.orientation, fromIFDAt: ifd0, where: { ![3, 4, 13].contains($0.type) })
        }
    }

    /// Unlinks every GPS IFD (from IFD0 and from any other IFD that links one) and zeroes it and every value
    /// it points to. A pointer to an IFD past the end of the Exif (a segment cut short, or a writer's bad
    /// offset) holds no location here: only the pointer goes. Throws when a GPS pointer leads to an unreadable
    /// IFD inside the Exif or when a GPS link is still there afterwards: the caller then drops the whole Exif
    /// rather than pass on a location it could not remove.
    mutating func removeGPS() throws {
        let walked = walk()
        guard walked.complete else { throw FormatError(reason: "more than \(ExifEditor.maxIFDs) IFDs") }
        for ifd in walked.ifds where ifd.role != .gps {
            for entry in ifd.entries where entry.tag == Tag.gpsIFD {
                if let gpsOffset = integerValue(entry), gpsOffset >= 8, gpsOffset + 2 > bytes.count {
                    zero(gpsOffset, 2)  // at most its last byte lies inside
                    continue
                }
                guard let gpsOffset = integerValue(entry), let gpsEntries = try? entries(ofIFDAt: gpsOffset) else {
                    throw FormatError(reason: "GPS pointer in the IFD at \(ifd.offset) leads nowhere readable")
                }
                zeroIFD(at: gpsOffset, entries: gpsEntries)
            }
            try removeEntries(Tag.gpsIFD, fromIFDAt: ifd.offset)
        }
        if hasGPS { throw FormatError(reason: "a GPS link survived its removal") }
    }

    /// Unlinks IFD1 (the thumbnail) and zeroes it, the thumbnail image and any IFD chained after it: the
    /// thumbnail can show the uncropped original. Throws when IFD1 is unreadable (its thumbnail could not
    /// be found to be removed).
    mutating func removeThumbnail() throws {
        let ifd0 = ifd0Offset
        var next = try nextIFD(after: ifd0)
        guard next != 0 else { return }
        guard (try? entries(ofIFDAt: next)) != nil else {
            throw FormatError(reason: "the thumbnail IFD at \(next) is unreadable")
        }
        var visited: Set<Int> = [ifd0]
        while next != 0, visited.insert(next).inserted, let list = try? entries(ofIFDAt: next) {
            let following = (try? nextIFD(after: next)) ?? 0
            zeroIFD(at: next, entries: list)
            next = following
        }
        let count = Int(try u16(ifd0))
        write32(0, at: ifd0 + 2 + count * 12)
        if hasThumbnail { throw FormatError(reason: "the thumbnail link survived its removal") }
    }

    /// Removes XMP (tag 700), IPTC (33723) and Photoshop resources (34377) embedded in IFDs, zeroing their
    /// values: `gps` mode drops XMP and IPTC, which can carry a location, wherever they are.
    mutating func removeEmbeddedProfiles() throws {
        let tags: Set<UInt16> = [Tag.xmp, Tag.iptc, Tag.photoshop]
        for ifd in walk().ifds where ifd.role != .gps {
            for entry in ifd.entries where tags.contains(entry.tag) && entry.byteSize > 4 {
                zero(entry.valuePosition, entry.byteSize)
            }
            for tag in tags { try removeEntries(tag, fromIFDAt: ifd.offset) }
        }
        if hasEmbeddedXMP || hasEmbeddedIPTC {
            throw FormatError(reason: "an embedded XMP or IPTC tag survived its removal")
        }
    }

    /// Zeroes every byte that no reachable structure references (IFD tables, their values, thumbnail and strip
    /// data): orphans of earlier edits, such as an old thumbnail or GPS block an editor unlinked but left in
    /// place, which `trimUnreferencedTail` only removes when they sit at the end. A maker note is kept
    /// whole, as its entry's value.
    mutating func zeroUnreferenced() {
        var ranges: [(start: Int, end: Int)] = [(0, 8)]
        func add(_ start: Int, _ length: Int) {
            guard start >= 0, length > 0, start < bytes.count else { return }
            ranges.append((start, min(bytes.count, start + length)))
        }
        for ifd in walk().ifds {
            add(ifd.offset, 2 + ifd.entries.count * 12 + 4)
            for entry in ifd.entries where entry.byteSize > 4 { add(entry.valuePosition, entry.byteSize) }
            for (start, length) in imageData(in: ifd.entries) { add(start, length) }
        }
        var position = 0
        for range in ranges.sorted(by: { $0.start < $1.start }) {
            if range.start > position { zero(position, range.start - position) }
            position = max(position, range.end)
        }
        if position < bytes.count { zero(position, bytes.count - position) }
    }

    /// Cuts bytes past the end of the last structure still referenced (zeroed blocks at the end go away).
    mutating func trimUnreferencedTail() {
        var end = 8
        for ifd in walk().ifds {
            end = max(end, ifd.offset + 2 + ifd.entries.count * 12 + 4)
            for entry in ifd.entries where entry.byteSize > 4 {
                end = max(end, entry.valuePosition + entry.byteSize)
            }
            for (start, length) in imageData(in: ifd.entries) where start >= 0 && length >= 0 {
                end = max(end, start + length)
            }
        }
        if end < bytes.count { bytes.removeLast(bytes.count - end) }
    }

    /// Zeroes an IFD's table, the values it points to and the image data it references.
    private mutating func zeroIFD(at offset: Int, entries list: [Entry]) {
        for entry in list where entry.byteSize > 4 { zero(entry.valuePosition, entry.byteSize) }
        for (start, length) in imageData(in: list) { zero(start, length) }
        zero(offset, 2 + list.count * 12 + 4)
    }

    /// Removes every entry with `tag` (that also matches `filter`) from the IFD at `offset`, shifting the
    /// later entries down and keeping the next-IFD pointer.
    private mutating func removeEntries(
        _ tag: UInt16, fromIFDAt offset: Int,
        where filter: (Entry) -> Bool = { _ in true }
    ) throws {
        while true {
            let count = Int(try u16(offset))
            let list = try entries(ofIFDAt: offset)
            guard let index = list.firstIndex(where: { $0.tag == tag && filter($0) }) else { return }
            let entryStart = offset + 2 + index * 12
            let tableEnd = offset + 2 + count * 12 + 4  // entries plus the next-IFD pointer
            guard tableEnd <= bytes.count else { throw FormatError(reason: "IFD runs past the end of Exif") }
            bytes.replaceSubrange(entryStart..<tableEnd - 12, with: bytes[entryStart + 12..<tableEnd])
            zero(tableEnd - 12, 12)
            write16(UInt16(count - 1), at: offset)
        }
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
