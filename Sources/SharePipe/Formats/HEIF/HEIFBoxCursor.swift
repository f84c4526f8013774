// The bounds-checked reading of ISO BMFF boxes the grid route parses with (`HEIFGridParsing.swift`).
extension HEIFGrid {
    /// A box or field that runs past its parent's end, or a size no box can have.
    struct Malformed: Error {}

    /// A bounds-checked cursor over bytes in memory.
    struct Cursor {
        let bytes: [UInt8]
        var position: Int
        let end: Int

        init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
            self.bytes = bytes
            position = start
            self.end = end ?? bytes.count
        }

        var left: Int { end - position }

        mutating func skip(_ count: Int) throws {
            guard count >= 0, count <= left else { throw Malformed() }
            position += count
        }

        mutating func uint(_ size: Int) throws -> Int {
            guard size >= 0, size <= 8, size <= left else { throw Malformed() }
            var value: UInt64 = 0
            for _ in 0..<size {
                value = value << 8 | UInt64(bytes[position])
                position += 1
            }
            guard value <= UInt64(Int.max) else { throw Malformed() }
            return Int(value)
        }

        mutating func u8() throws -> Int { try uint(1) }
        mutating func u16() throws -> Int { try uint(2) }
        mutating func u32() throws -> Int { try uint(4) }

        mutating func fourCC() throws -> String {
            guard left >= 4 else { throw Malformed() }
            defer { position += 4 }
            return String(decoding: bytes[position..<position + 4], as: UTF8.self)
        }

        /// The next box: its type and a cursor over its body; this cursor moves past it.
        mutating func box() throws -> (type: String, body: Cursor) {
            let size32 = try u32()
            let type = try fourCC()
            let bodySize: Int
            switch size32 {
            case 0: bodySize = left
            case 1:
                let large = try uint(8)
                guard large >= 16 else { throw Malformed() }
                bodySize = large - 16
            default:
                guard size32 >= 8 else { throw Malformed() }
                bodySize = size32 - 8
            }
            guard bodySize <= left else { throw Malformed() }
            let body = Cursor(bytes, from: position, to: position + bodySize)
            position += bodySize
            return (type, body)
        }

        /// A NUL-terminated string (UTF-8), or the rest of the cursor when no NUL follows; moves past the NUL.
        mutating func cString() -> String {
            let start = position
            while position < end, bytes[position] != 0 { position += 1 }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            if position < end { position += 1 }
            return text
        }

        /// Version and flags of a full box.
        mutating func fullBoxHeader() throws -> (version: Int, flags: Int) {
            let word = try u32()
            return (word >> 24, word & 0xFFFFFF)
        }

        /// Walks an `iinf` box's body: calls `visit` with each version-2+ `infe` entry's item type and the rest of
        /// the entry (after item_ID and item_protection_index: item_name and, for `mime`, content_type follow).
        mutating func forEachItemInfo(_ visit: (_ itemType: String, _ rest: inout Cursor) throws -> Void) throws {
            let (version, _) = try fullBoxHeader()
            let count = version == 0 ? try u16() : try u32()
            for _ in 0..<count {
                var (entryType, entry) = try box()
                let (entryVersion, _) = try entry.fullBoxHeader()
                guard entryType == "infe", entryVersion >= 2 else { continue }
                try entry.skip(entryVersion == 2 ? 4 : 6)  // item_ID, item_protection_index
                let itemType = try entry.fourCC()
                try visit(itemType, &entry)
            }
        }
    }
}
