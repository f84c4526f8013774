/// The two levels of a GIF, as gifsicle models them (Gif_Stream / Gif_Image): a container with the
/// properties of the whole stream, and frames with their own. Each type holds only its level's properties,
/// so the writer cannot put a property at the wrong level (where it would be silently lost).

/// A colour table: up to 256 RGB entries. Files store power-of-two sizes; `count` is the entries in use.
struct GIFPalette: Equatable, Sendable {
    /// RGB triples, `count * 3` bytes.
    var rgb: [UInt8]
    /// The table's sort flag as stored (entries in order of importance).
    var sorted: Bool = false

    var count: Int { rgb.count / 3 }

    init(rgb: [UInt8], sorted: Bool = false) {
        precondition(rgb.count % 3 == 0 && rgb.count <= 768, "a GIF palette holds at most 256 RGB entries")
        self.rgb = rgb
        self.sorted = sorted
    }

    /// The entry at `index` as (r, g, b).
    @inline(__always)
    func color(_ index: Int) -> (UInt8, UInt8, UInt8) { (rgb[index * 3], rgb[index * 3 + 1], rgb[index * 3 + 2]) }

    /// The table padded with black to the power-of-two size a file stores (at least 2).
    var paddedForFile: [UInt8] {
        var size = 2
        while size < count { size *= 2 }
        return rgb + [UInt8](repeating: 0, count: (size - count) * 3)
    }
}

extension GIFPalette {
    /// The table a frame without any colour table (neither local nor global) is drawn with. GIF89a leaves it
    /// to the decoder ("a system color table"); Chromium draws every index opaque black and still honours
    /// the transparent index, and so does SharePipe.
    static let noColorTable = GIFPalette(rgb: [UInt8](repeating: 0, count: 768))
}

/// A frame's position on the logical screen, as stored (it may reach past the screen).
struct GIFRect: Equatable, Sendable, CustomStringConvertible {
    var left: Int
    var top: Int
    var width: Int
    var height: Int

    var right: Int { left + width }
    var bottom: Int { top + height }
    var area: Int { width * height }
    var isEmpty: Bool { width <= 0 || height <= 0 }

    /// The part of the rectangle inside a screen of `size` (empty when none of it is).
    func clipped(to size: PixelSize) -> GIFRect {
        let l = min(max(left, 0), size.width), t = min(max(top, 0), size.height)
        let r = min(max(right, 0), size.width), b = min(max(bottom, 0), size.height)
        return GIFRect(left: l, top: t, width: max(0, r - l), height: max(0, b - t))
    }

    var description: String { "\(width)×\(height) at \(left),\(top)" }
}

/// What happens to a frame's area after it has been shown (Graphics Control Extension, 3 bits).
/// The raw value is kept as written; 4...7 are undefined and, like browsers, treated as `none`.
struct GIFDisposal: RawRepresentable, Equatable, Sendable, CustomStringConvertible {
    var rawValue: Int
    init(rawValue: Int) { self.rawValue = rawValue & 7 }

    /// 0: the encoder did not say; viewers leave the frame in place.
    static let unspecified = GIFDisposal(rawValue: 0)
    /// 1: leave the frame in place.
    static let none = GIFDisposal(rawValue: 1)
    /// 2: clear the frame's rectangle. Browsers clear to transparent (not to the background colour), and so do we.
    static let background = GIFDisposal(rawValue: 2)
    /// 3: restore the rectangle to what it was before the frame was drawn.
    static let previous = GIFDisposal(rawValue: 3)

    var description: String {
        switch rawValue {
        case 0: return "unspecified"
        case 1: return "none"
        case 2: return "background"
        case 3: return "previous"
        default: return "undefined(\(rawValue))"
        }
    }
}

/// A Graphics Control Extension: the frame-level timing and transparency, exactly as stored.
struct GIFGraphicsControl: Equatable, Sendable {
    var disposal: GIFDisposal = .unspecified
    /// Waits for user input before the next frame (the flag, as stored).
    var userInput: Bool = false
    /// Delay after the frame, in centiseconds, as written (0 and 1 are kept; viewers differ on them).
    var delay: Int = 0
    /// The palette index that is transparent, if the flag is set.
    var transparentIndex: Int?
    /// The reserved bits 5...7 of the packed byte, kept so a frame can be written back unchanged.
    var reservedBits: UInt8 = 0

    /// Parses the 4-byte extension payload; nil when it is not 4 bytes long.
    init?(payload: [UInt8]) {
        guard payload.count == 4 else { return nil }
        let packed = payload[0]
        disposal = GIFDisposal(rawValue: Int((packed >> 2) & 7))
        userInput = packed & 0x02 != 0
        delay = Int(payload[1]) | Int(payload[2]) << 8
        transparentIndex = packed & 0x01 != 0 ? Int(payload[3]) : nil
        reservedBits = packed >> 5
    }

    init(disposal: GIFDisposal = .unspecified, userInput: Bool = false, delay: Int = 0, transparentIndex: Int? = nil) {
        self.disposal = disposal
        self.userInput = userInput
        self.delay = delay
        self.transparentIndex = transparentIndex
    }

    /// The 4-byte payload to write.
    var payload: [UInt8] {
        var packed = (reservedBits & 7) << 5 | UInt8(disposal.rawValue & 7) << 2
        if userInput { packed |= 0x02 }
        if transparentIndex != nil { packed |= 0x01 }
        let delay = min(max(self.delay, 0), 0xFFFF)
        return [packed, UInt8(delay & 0xFF), UInt8(delay >> 8), UInt8(transparentIndex ?? 0)]
    }
}

/// Container-level properties: the logical screen, the global colour table, the loop count and the
/// stream's metadata. One per file; written once, before the first frame.
struct GIFContainer: Equatable, Sendable {
    /// The logical screen (canvas) size.
    var screenSize: PixelSize
    var globalPalette: GIFPalette?
    /// Background colour index (browsers ignore it and use transparency; kept as stored).
    var backgroundIndex: Int
    /// Colour resolution, bits per primary (1...8), as stored.
    var colorResolution: Int
    /// Pixel aspect ratio byte, as stored (0: not given).
    var aspectByte: Int
    /// The NETSCAPE2.0 (or ANIMEXTS1.0) loop count: nil when the file has no loop extension (plays once),
    /// 0 for forever, else the stored value. With several loop extensions, the first one's.
    var loopCount: Int?
    /// Comments and application extensions other than the loop extension, in file order.
    var metadata: [MetadataBlock]
}

/// Frame-level properties: where the frame goes, its own colour table and interlacing, and its
/// Graphics Control Extension (nil when the frame had none: a viewer then uses delay 0, no transparency,
/// disposal unspecified).
struct GIFFrame: Equatable, Sendable {
    var rect: GIFRect
    var localPalette: GIFPalette?
    var interlaced: Bool
    var control: GIFGraphicsControl?

    /// The colour table the frame is drawn with: its own, else the global one, else `GIFPalette.noColorTable`.
    func palette(global: GIFPalette?) -> GIFPalette { localPalette ?? global ?? .noColorTable }

    var delay: Int { control?.delay ?? 0 }
    var disposal: GIFDisposal { control?.disposal ?? .unspecified }
    var transparentIndex: Int? { control?.transparentIndex }
}

/// Interlaced GIF rows come in four passes: every 8th row from 0, every 8th from 4, every 4th from 2,
/// every 2nd from 1.
enum GIFInterlace {
    /// The image row of the `index`-th stored row of an interlaced image of `height` rows.
    static func rows(height: Int) -> [Int] {
        var order: [Int] = []
        order.reserveCapacity(height)
        for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
            var y = start
            while y < height { order.append(y); y += step }
        }
        return order
    }
}
