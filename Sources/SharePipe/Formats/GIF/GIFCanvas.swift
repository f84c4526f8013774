/// The logical screen as a browser keeps it while an animation plays: RGBA, fully transparent at the start.
/// Each frame is drawn over it (its transparent index, and indices past the end of its colour table, leave
/// pixels as they are) and disposed of after it was shown: `background` clears the frame's rectangle to
/// transparent (what browsers do, rather than painting the background colour), `previous` restores what was
/// there before the frame. Frame rectangles are clipped to the screen; a frame wholly outside changes nothing.
///
/// Memory: the canvas (4 bytes per screen pixel), one row of indices, and for `previous` a copy of the
/// frame's clipped rectangle, all counted in the meter.
///
/// The canvas keeps a rectangle holding every pixel drawing or disposal may have changed since the last
/// `takeChanges()`, so a picture made from it can be updated where it changed instead of remade whole.
final class GIFCanvas {
    let size: PixelSize
    /// RGBA rows, straight alpha (0 or 255), top to bottom.
    private(set) var pixels: [UInt8]
    private var saved: [UInt8] = []
    private var savedRect: GIFRect?
    private let meter: PixelMemoryMeter
    /// Holds every pixel changed since the last `takeChanges()`; nil when none may have.
    private(set) var changes: GIFRect?

    init(size: PixelSize, meter: PixelMemoryMeter) {
        self.size = size
        self.meter = meter
        pixels = [UInt8](repeating: 0, count: size.area * 4)
        meter.allocate(pixels.count)
    }

    deinit {
        meter.release(pixels.count + saved.count)
    }

    /// Decodes the stream's current frame and draws it. Returns the frame's rectangle clipped to the screen
    /// (empty when the frame lies wholly outside; its data is then skipped, not decoded).
    @discardableResult
    func draw(_ frame: GIFFrame, globalPalette: GIFPalette?, from stream: GIFStream) throws -> GIFRect {
        let palette = frame.palette(global: globalPalette)
        let visible = frame.rect.clipped(to: size)
        if visible.isEmpty {
            try stream.skipRows()
            return visible
        }
        if frame.disposal == .previous { save(visible) }
        noteChange(visible)

        // One lookup per index: packed RGBA, or 0 for "leave the pixel" (transparent or out of range).
        var lookup = [UInt32](repeating: 0, count: 256)
        for entry in 0..<palette.count where entry != frame.transparentIndex {
            let (r, g, b) = palette.color(entry)
            lookup[entry] = UInt32(r) | UInt32(g) << 8 | UInt32(b) << 16 | 0xFF00_0000
        }
        let width = size.width
        let firstColumn = visible.left - frame.rect.left, lastColumn = visible.right - frame.rect.left
        let rowBytes = frame.rect.width
        meter.allocate(rowBytes)
        defer { meter.release(rowBytes) }
        try lookup.withUnsafeBufferPointer { table in
            try stream.readRows { y, row in
                let canvasY = frame.rect.top + y
                guard canvasY >= visible.top, canvasY < visible.bottom else { return }
                pixels.withUnsafeMutableBytes { canvas in
                    let base = canvas.baseAddress!
                    var offset = (canvasY * width + frame.rect.left + firstColumn) * 4
                    for x in firstColumn..<lastColumn {
                        let value = table[Int(row[x])]
                        if value != 0 { base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self) }
                        offset += 4
                    }
                }
            }
        }
        return visible
    }

    /// Applies the frame's disposal method, after it has been shown.
    func dispose(_ frame: GIFFrame) {
        let visible = frame.rect.clipped(to: size)
        defer { dropSaved() }
        guard !visible.isEmpty else { return }
        switch frame.disposal {
        case .background:
            noteChange(visible)
            let width = size.width
            pixels.withUnsafeMutableBufferPointer { canvas in
                for y in visible.top..<visible.bottom {
                    (canvas.baseAddress! + (y * width + visible.left) * 4).update(
                        repeating: 0, count: visible.width * 4)
                }
            }
        case .previous:
            guard let rect = savedRect, rect == visible else { return }
            noteChange(rect)
            copyRegion(rect, from: saved, toCanvas: true)
        default:
            break
        }
    }

    /// The rectangle holding every pixel changed since the last call (nil when none may have), and starts afresh.
    func takeChanges() -> GIFRect? {
        defer { changes = nil }
        return changes
    }

    private func noteChange(_ rect: GIFRect) {
        guard !rect.isEmpty else { return }
        changes = changes.map { $0.union(rect) } ?? rect
    }

    private func save(_ rect: GIFRect) {
        dropSaved()
        saved = [UInt8](repeating: 0, count: rect.area * 4)
        meter.allocate(saved.count)
        savedRect = rect
        copyRegion(rect, from: pixels, toCanvas: false)
    }

    private func dropSaved() {
        meter.release(saved.count)
        saved = []
        savedRect = nil
    }

    /// Copies a rectangle between the canvas and the (tightly packed) saved region.
    private func copyRegion(_ rect: GIFRect, from source: [UInt8], toCanvas: Bool) {
        let width = size.width, rowBytes = rect.width * 4
        for row in 0..<rect.height {
            let canvasStart = ((rect.top + row) * width + rect.left) * 4
            let savedStart = row * rowBytes
            if toCanvas {
                pixels.replaceSubrange(
                    canvasStart..<canvasStart + rowBytes, with: source[savedStart..<savedStart + rowBytes])
            } else {
                saved.replaceSubrange(
                    savedStart..<savedStart + rowBytes, with: source[canvasStart..<canvasStart + rowBytes])
            }
        }
    }
}
