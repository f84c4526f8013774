/// Turns a sequence of whole pictures (each frame composited and resampled: RGBA at the output size) into
/// GIF frames that, played by a viewer, show those pictures.
///
/// It keeps a model of what the viewer shows: for every output pixel, whether it is opaque and which target
/// colour it was last written for. Each frame is written as the bounding box of the pixels whose target
/// changed; inside it, unchanged pixels are written as the transparent index ("leave as is"), which keeps
/// files small. Drawing can never make a pixel transparent again, so each frame is written only once the next
/// picture is known (one frame of lookahead): the frame keeps its source disposal method when that leaves
/// the viewer in a state the next picture can be drawn over, and otherwise gets `background` disposal with
/// its rectangle grown over every pixel the next picture needs transparent.
///
/// Colours: the frame's source palette (local, else the global one) when nearest-colour mapping serves
/// its changed pixels (mean squared error under a threshold), otherwise a palette made for the frame
/// (exact colours, or median cut) written as a local table. The transparent index is the source's where it
/// still means something, else an unused entry, else a slot added to the table, else (full table) the least
/// used entry, whose pixels are mapped to their next-nearest colour.
final class GIFAnimationEncoder {
    /// One composited picture and the frame-level properties of the source frame it comes from.
    struct Picture {
        /// RGBA, `size.area * 4` bytes.
        var pixels: [UInt8]
        var source: GIFFrame
        /// Delay to write: the source frame's, plus those of frames dropped after it.
        var delay: Int
        /// Where, in output pixels, the picture may have lost opacity since the previous picture (the
        /// source frames' disposal areas widened by the filter's reach); nil where it cannot have. Elsewhere a
        /// pixel shown opaque stays opaque even if resampling dipped its alpha under one half: Lanczos lobes
        /// swing alpha near edges as neighbours change, and a viewer cannot make a pixel transparent again
        /// without clearing (and so rewriting) a whole rectangle.
        var coverageMayDrop: GIFRect?
        /// Where, in output pixels, the picture may differ from the previous picture; nil: anywhere (the
        /// first picture always counts as changed everywhere). Outside it, the encoder does not look for
        /// changed pixels.
        var changed: GIFRect? = nil
        /// Write this picture's frame over the whole screen, its transparent pixels as the transparent index,
        /// instead of the bounding box of its visible pixels. For the first frame where the source's covers
        /// the screen: ffmpeg, ImageMagick and Pillow fill what frame 0 leaves uncovered with the background
        /// colour (browsers leave it transparent), so a trimmed frame 0 shows right only in browsers.
        var fillsScreen = false
    }

    /// What was done, for reports.
    struct Statistics {
        var framesWritten = 0
        var framesWithOwnPalette = 0
        var disposalsChanged = 0
        var delaysClamped = 0
    }

    let size: PixelSize
    /// The output global palette (the source's, or reduced), if any.
    let globalPalette: GIFPalette?
    /// Largest colour table made for a frame; nil keeps the source palettes where they serve (256 otherwise).
    let colorBudget: Int?
    /// How often each global palette entry was used (weights for a later colour reduction).
    private(set) var globalUsage: [Int]
    private(set) var statistics = Statistics()

    private let writer: GIFWriter
    private let meter: PixelMemoryMeter
    /// Whether the pictures' arrays are counted here (false when their producer counts them: the
    /// `GIFPictureResampler`'s two pictures).
    private let countsPictures: Bool
    /// The viewer model: RGBA per pixel, alpha 255 where the viewer shows an opaque pixel, RGB the target
    /// colour it was last written for.
    private var shown: [UInt8]
    private var pending: Picture?
    private var indices: [UInt8] = []
    /// Whether each output pixel changed, for the frame being written; all false between frames (only the
    /// changed pixels' bounding box is ever set, and it is cleared after the frame).
    private var dirty: [Bool]
    /// Where the viewer model may not show the latest written picture's opaque pixels (after a `previous`
    /// or `background` disposal, and everywhere before the first frame). Together with the next picture's
    /// `changed` area, the only place changed pixels can be.
    private var stale: GIFRect
    /// The nearest-colour mappers used last (the global palette's, and the frame's own), most recent first.
    private var mappers: [GIFNearestColor] = []

    /// Mean squared RGB error (summed over the three channels) under which a source palette "serves".
    static let paletteServesBelow = 300

    init(
        size: PixelSize, globalPalette: GIFPalette?, colorBudget: Int?, writer: GIFWriter, meter: PixelMemoryMeter,
        countsPictures: Bool = true
    ) {
        self.countsPictures = countsPictures
        self.size = size
        self.globalPalette = globalPalette
        self.colorBudget = colorBudget
        self.writer = writer
        self.meter = meter
        globalUsage = [Int](repeating: 0, count: globalPalette?.count ?? 0)
        shown = [UInt8](repeating: 0, count: size.area * 4)
        dirty = [Bool](repeating: false, count: size.area)
        stale = GIFRect(left: 0, top: 0, width: size.width, height: size.height)
        meter.allocate(shown.count + dirty.count)
    }

    deinit {
        meter.release(shown.count + dirty.count + (countsPictures ? pending?.pixels.count ?? 0 : 0) + indices.count)
    }

    /// Adds the next picture; writes the one before it, now that its successor is known.
    func add(_ picture: Picture) throws {
        precondition(picture.pixels.count == size.area * 4, "picture does not match the output size")
        if countsPictures { meter.allocate(picture.pixels.count) }
        if let previous = pending {
            try write(previous, next: picture)
            if countsPictures { meter.release(previous.pixels.count) }
        }
        pending = picture
    }

    /// Adds `delay` to the latest picture (a dropped frame's time goes to the frame shown instead).
    func extendLatestDelay(by delay: Int) {
        pending?.delay += delay
    }

    /// Writes the last picture.
    func finish() throws {
        guard let last = pending else { return }
        try write(last, next: nil)
        if countsPictures { meter.release(last.pixels.count) }
        pending = nil
    }

    // MARK: - One frame

    /// Writes `picture` as one frame, knowing the picture after it (nil for the last):
    /// 1. mark the pixels whose target changed (`markChangedPixels`);
    /// 2. clear, by `background` disposal, what the next picture needs transparent (`clearForNext`);
    /// 3. choose the palette and transparent index and fill the indices (`encodeFrame`), and write it;
    /// 4. update the viewer model: draw, then dispose (`updateViewer`).
    private func write(_ picture: Picture, next: Picture?) throws {
        let box = markChangedPixels(picture)
        defer { clearMask(box) }
        // The frame covers the changed pixels, or the whole screen (`fillsScreen`). An unchanged picture
        // still becomes a (1×1) frame, so the frame count and timing survive.
        let covered = picture.fillsScreen ? GIFRect(left: 0, top: 0, width: size.width, height: size.height) : box
        var rect = covered ?? GIFRect(left: 0, top: 0, width: 1, height: 1)
        var disposal = picture.source.disposal
        if let next, let mayDrop = next.coverageMayDrop,
            let clear = conflicts(next, in: mayDrop, afterDisposal: disposal, of: rect)
        {
            rect = covered.map { $0.union(clear) } ?? clear
            if disposal != .background { statistics.disposalsChanged += 1 }
            disposal = .background
        }
        let frame = try encodeFrame(picture, rect: rect, dirty: dirty, disposal: disposal)
        try writer.putFrame(frame, indices: &indices)
        statistics.framesWritten += 1
        updateViewer(picture, rect: rect, changed: box, disposal: disposal)
    }

    /// Sets `dirty` for every opaque target pixel the viewer does not show yet, looking only where the
    /// picture changed or the viewer model was left behind by the last frame; returns their bounding box.
    private func markChangedPixels(_ picture: Picture) -> GIFRect? {
        let width = size.width
        let whole = GIFRect(left: 0, top: 0, width: size.width, height: size.height)
        let scan = (picture.changed.map { $0.union(stale) } ?? whole).clipped(to: size)
        var box = BoundingBox()
        withUnsafeBufferPointers(picture.pixels, shown, writing: &dirty) { dirtyBuffer, qBuffer, sBuffer in
            let d = dirtyBuffer.baseAddress!, q = UnsafeRawPointer(qBuffer.baseAddress!),
                s = UnsafeRawPointer(sBuffer.baseAddress!)
            for y in scan.top..<scan.bottom {
                var first = Int.max, last = -1
                for x in scan.left..<scan.right {
                    let p = y * width + x
                    // RGBA as a little-endian word: alpha is the top byte.
                    let target = UInt32(littleEndian: q.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
                    guard target >= 0x8000_0000 else { continue }
                    let seen = UInt32(littleEndian: s.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
                    if seen != target | 0xFF00_0000 {
                        d[p] = true
                        if x < first { first = x }
                        last = x
                    }
                }
                if last >= 0 {
                    box.add(x: first, y: y)
                    box.add(x: last, y: y)
                }
            }
        }
        return box.rect
    }

    /// Leaves the mask all false for the next frame (only `changed` was ever set).
    private func clearMask(_ changed: GIFRect?) {
        guard let changed else { return }
        let width = size.width
        dirty.withUnsafeMutableBufferPointer { d in
            for y in changed.top..<changed.bottom {
                (d.baseAddress! + y * width + changed.left).update(repeating: false, count: changed.width)
            }
        }
    }

    /// The pixels in `area` that `next` needs transparent but the viewer would still show opaque after
    /// this frame (`rect`, drawn where `dirty`) and its `disposal`: their bounding box, or nil.
    private func conflicts(_ next: Picture, in area: GIFRect, afterDisposal disposal: GIFDisposal, of rect: GIFRect)
        -> GIFRect?
    {
        let width = size.width
        var conflicts = BoundingBox()
        withUnsafeBufferPointers(next.pixels, shown, dirty) { n, s, dirty in
            for y in area.top..<area.bottom {
                for x in area.left..<area.right where n[(y * width + x) * 4 + 3] < 128 {
                    let p = y * width + x
                    let opaqueNow = s[p * 4 + 3] == 255
                    let opaqueAfterDisposal: Bool
                    switch disposal {
                    case .previous: opaqueAfterDisposal = opaqueNow
                    case .background where rect.contains(x: x, y: y): opaqueAfterDisposal = false
                    default: opaqueAfterDisposal = opaqueNow || dirty[p]
                    }
                    if opaqueAfterDisposal { conflicts.add(x: x, y: y) }
                }
            }
        }
        return conflicts.rect
    }

    /// The viewer after the frame: changed pixels drawn, then the disposal applied; and where it may now
    /// not show this picture's opaque pixels (`stale`).
    private func updateViewer(_ picture: Picture, rect: GIFRect, changed: GIFRect?, disposal: GIFDisposal) {
        switch disposal {
        case .previous: stale = changed ?? .empty
        case .background: stale = rect
        default: stale = .empty
        }
        guard disposal != .previous else { return }
        let width = size.width
        withUnsafeBufferPointers(picture.pixels, dirty, writing: &shown) { s, q, dirty in
            for y in rect.top..<rect.bottom {
                for x in rect.left..<rect.right {
                    let p = y * width + x
                    if dirty[p] {
                        s[p * 4] = q[p * 4]; s[p * 4 + 1] = q[p * 4 + 1]; s[p * 4 + 2] = q[p * 4 + 2]
                        s[p * 4 + 3] = 255
                    }
                    if disposal == .background { s[p * 4 + 3] = 0 }
                }
            }
        }
    }

    /// A frame's colour table as chosen: the entries, whether it is written as a local table, the source's
    /// transparent index where it still means something, and how often each entry was used.
    private struct TableChoice {
        var palette: GIFPalette
        var isLocal: Bool
        var sourceTransparent: Int?
        var usage: [Int]
    }

    /// Chooses the frame's palette and transparent index, fills `indices` for `rect`, and returns the frame
    /// to write (its source's frame-level properties, with the new rectangle, palette, disposal and index).
    private func encodeFrame(_ picture: Picture, rect: GIFRect, dirty: [Bool], disposal: GIFDisposal) throws -> GIFFrame
    {
        if indices.count != rect.area {
            meter.release(indices.count)
            indices = [UInt8](repeating: 0, count: rect.area)
            meter.allocate(rect.area)
        }
        var choice = chooseTable(picture, rect: rect, dirty: dirty)
        let transparent = chooseTransparentIndex(picture, rect: rect, dirty: dirty, choice: &choice)
        fillUnchangedPixels(rect, transparent: transparent, palette: choice.palette)
        if !choice.isLocal {
            for entry in 0..<min(globalUsage.count, 256) { globalUsage[entry] += choice.usage[entry] }
        }
        return GIFFrame(
            rect: rect, localPalette: choice.isLocal ? choice.palette : nil, interlaced: picture.source.interlaced,
            control: control(for: picture, transparent: transparent, disposal: disposal))
    }

    /// The source's own table where nearest-colour mapping serves the changed pixels (reduced budgets drop
    /// local tables for per-frame palettes), else a table made of the frame's own changed pixels. Maps the
    /// changed pixels into `indices`.
    private func chooseTable(_ picture: Picture, rect: GIFRect, dirty: [Bool]) -> TableChoice {
        let source = picture.source
        var palette: GIFPalette?
        var isLocal = false
        var sourceTransparent: Int?
        if let local = source.localPalette, colorBudget == nil {
            palette = local
            isLocal = true
            sourceTransparent = source.transparentIndex.flatMap { $0 < local.count ? $0 : nil }
        } else if source.localPalette == nil, let global = globalPalette {
            palette = global
            if colorBudget == nil {
                sourceTransparent = source.transparentIndex.flatMap { $0 < global.count ? $0 : nil }
            }
        }
        var usage = [Int](repeating: 0, count: 256)
        if let candidate = palette, !(sourceTransparent != nil && candidate.count < 2) {
            let error = mapDirty(
                picture, rect: rect, dirty: dirty, palette: candidate, excluding: sourceTransparent,
                usage: &usage)
            if error == nil || error! <= Self.paletteServesBelow {
                return TableChoice(
                    palette: candidate, isLocal: isLocal, sourceTransparent: sourceTransparent, usage: usage)
            }
        }
        // A palette of the frame's own changed pixels.
        let budget = (colorBudget ?? 256) - 1
        let own = ownPalette(picture, rect: rect, dirty: dirty, maxColors: max(1, budget))
        usage = [Int](repeating: 0, count: 256)
        _ = mapDirty(picture, rect: rect, dirty: dirty, palette: own, excluding: nil, usage: &usage)
        statistics.framesWithOwnPalette += 1
        return TableChoice(palette: own, isLocal: true, sourceTransparent: nil, usage: usage)
    }

    /// The transparent index: needed for transparent pixels inside the rectangle; wanted (to leave
    /// unchanged pixels alone) whenever the frame may have a control extension. The source's where it still
    /// means something, else an unused entry, else a slot added to the table, else (full table, and needed)
    /// the least used entry, whose pixels are mapped to their next-nearest colour.
    private func chooseTransparentIndex(_ picture: Picture, rect: GIFRect, dirty: [Bool], choice: inout TableChoice)
        -> Int?
    {
        let width = size.width
        // Unchanged pixels the viewer shows transparent must be written transparent; unchanged opaque ones
        // are best written transparent too ("leave as is"), where the frame has a control extension anyway.
        var needsTransparency = false, hasUnchanged = false
        withUnsafeBufferPointers(shown, dirty) { s, dirty in
            outer: for y in rect.top..<rect.bottom {
                for x in rect.left..<rect.right where !dirty[y * width + x] {
                    hasUnchanged = true
                    if s[(y * width + x) * 4 + 3] != 255 {
                        needsTransparency = true
                        break outer
                    }
                }
            }
        }
        guard needsTransparency || (hasUnchanged && picture.source.control != nil) else { return nil }
        if let sourceTransparent = choice.sourceTransparent { return sourceTransparent }
        if let unused = (0..<choice.palette.count).first(where: { choice.usage[$0] == 0 }) { return unused }
        if choice.palette.count < 256 {
            choice.palette = GIFPalette(rgb: choice.palette.rgb + [0, 0, 0], sorted: false)
            choice.isLocal = true
            return choice.palette.count - 1
        }
        guard needsTransparency else { return nil }
        let leastUsed = (0..<choice.palette.count).min { choice.usage[$0] < choice.usage[$1] }!
        remap(picture, rect: rect, dirty: dirty, from: leastUsed, palette: choice.palette)
        return leastUsed
    }

    /// Unchanged pixels inside the rectangle: "leave as is" (the transparent index) where there is one,
    /// else their shown colour again. (The mapper is made only without a transparent index: a one-entry
    /// table whose entry is the transparent index has nothing else to map to.)
    private func fillUnchangedPixels(_ rect: GIFRect, transparent: Int?, palette: GIFPalette) {
        let width = size.width
        let nearest = transparent == nil ? mapper(for: palette, excluding: nil) : nil
        withUnsafeBufferPointers(shown, dirty, writing: &indices) { indices, s, dirty in
            for y in rect.top..<rect.bottom {
                for x in rect.left..<rect.right {
                    let p = y * width + x, i = (y - rect.top) * rect.width + (x - rect.left)
                    if dirty[p] { continue }
                    if let transparent {
                        indices[i] = UInt8(transparent)
                    } else {
                        indices[i] = UInt8(nearest!.index(s[p * 4], s[p * 4 + 1], s[p * 4 + 2]))
                    }
                }
            }
        }
    }

    /// The frame's Graphics Control Extension: the source's, or a new one where the frame needs one
    /// (transparency, a disposal, a delay); delays over 655.35 s are clamped and counted.
    private func control(for picture: Picture, transparent: Int?, disposal: GIFDisposal) -> GIFGraphicsControl? {
        var control = picture.source.control
        if control == nil && (transparent != nil || disposal != .unspecified || picture.delay != 0) {
            control = GIFGraphicsControl()
        }
        guard control != nil else { return nil }
        if picture.delay > 0xFFFF { statistics.delaysClamped += 1 }
        control!.delay = min(picture.delay, 0xFFFF)
        control!.disposal = disposal
        control!.transparentIndex = transparent
        return control
    }

    /// Maps the changed pixels in `rect` to `palette` into `indices`, counting entry use. Returns the mean
    /// squared error per pixel (nil when no pixel changed).
    private func mapDirty(
        _ picture: Picture, rect: GIFRect, dirty: [Bool], palette: GIFPalette, excluding: Int?,
        usage: inout [Int]
    ) -> Int? {
        let nearest = mapper(for: palette, excluding: excluding)
        var error = 0, count = 0
        let width = size.width
        withUnsafeBufferPointers(picture.pixels, palette.rgb, dirty, writing: &indices) {
            indicesBuffer, qBuffer, rgbBuffer, dirtyBuffer in
            usage.withUnsafeMutableBufferPointer { usageBuffer in
                let q = qBuffer.baseAddress!, rgb = rgbBuffer.baseAddress!, d = dirtyBuffer.baseAddress!
                let out = indicesBuffer.baseAddress!, used = usageBuffer.baseAddress!
                for y in rect.top..<rect.bottom {
                    let row = out + (y - rect.top) * rect.width - rect.left
                    for x in rect.left..<rect.right {
                        let p = y * width + x
                        guard d[p] else { continue }
                        let r = q[p * 4], g = q[p * 4 + 1], b = q[p * 4 + 2]
                        let entry = nearest.index(r, g, b)
                        row[x] = UInt8(truncatingIfNeeded: entry)
                        used[entry] += 1
                        let dr = Int(rgb[entry * 3]) - Int(r), dg = Int(rgb[entry * 3 + 1]) - Int(g)
                        let db = Int(rgb[entry * 3 + 2]) - Int(b)
                        error += dr * dr + dg * dg + db * db
                        count += 1
                    }
                }
            }
        }
        return count == 0 ? nil : error / count
    }

    /// A nearest-colour mapper for `palette` without `excluded`: the last one made when it serves (most frames
    /// use the global palette, so its cache stays warm from frame to frame), else a new one.
    private func mapper(for palette: GIFPalette, excluding excluded: Int?) -> GIFNearestColor {
        if let cached = mappers.first(where: { $0.serves(palette, excluding: excluded) }) { return cached }
        let made = GIFNearestColor(palette: palette, excluding: excluded)
        mappers.insert(made, at: 0)
        if mappers.count > 2 { mappers.removeLast() }
        return made
    }

    /// Re-maps the changed pixels that use `entry` to their nearest other entry (so `entry` can be transparent).
    private func remap(_ picture: Picture, rect: GIFRect, dirty: [Bool], from entry: Int, palette: GIFPalette) {
        let nearest = mapper(for: palette, excluding: entry)
        let width = size.width
        withUnsafeBufferPointers(picture.pixels, writing: &indices) { indices, q in
            for y in rect.top..<rect.bottom {
                for x in rect.left..<rect.right {
                    let p = y * width + x, i = (y - rect.top) * rect.width + (x - rect.left)
                    if dirty[p] && Int(indices[i]) == entry {
                        indices[i] = UInt8(nearest.index(q[p * 4], q[p * 4 + 1], q[p * 4 + 2]))
                    }
                }
            }
        }
    }

    /// A palette for the frame's changed pixels: their exact colours if few enough, else a median cut.
    private func ownPalette(_ picture: Picture, rect: GIFRect, dirty: [Bool], maxColors: Int) -> GIFPalette {
        let width = size.width
        let changed = [UInt8](unsafeUninitializedCapacity: rect.area * 4) { out, written in
            written = 0
            withUnsafeBufferPointers(picture.pixels, dirty) { q, dirty in
                for y in rect.top..<rect.bottom {
                    for x in rect.left..<rect.right where dirty[y * width + x] {
                        let o = (y * width + x) * 4
                        out[written] = q[o]; out[written + 1] = q[o + 1]; out[written + 2] = q[o + 2]
                        out[written + 3] = 255
                        written += 4
                    }
                }
            }
        }
        meter.allocate(changed.count)
        defer { meter.release(changed.count) }
        return changed.withUnsafeBufferPointer { GIFQuantizer.palette(rgba: $0, maxColors: maxColors) }
    }
}

/// The smallest rectangle holding the points added.
struct BoundingBox {
    private var minX = Int.max, minY = Int.max, maxX = Int.min, maxY = Int.min

    mutating func add(x: Int, y: Int) {
        if x < minX { minX = x }
        if x > maxX { maxX = x }
        if y < minY { minY = y }
        if y > maxY { maxY = y }
    }

    var rect: GIFRect? {
        minX == Int.max ? nil : GIFRect(left: minX, top: minY, width: maxX - minX + 1, height: maxY - minY + 1)
    }
}

extension GIFRect {
    /// No pixels.
    static let empty = GIFRect(left: 0, top: 0, width: 0, height: 0)

    func contains(x: Int, y: Int) -> Bool { x >= left && x < right && y >= top && y < bottom }

    /// The smallest rectangle holding both (an empty one adds nothing).
    func union(_ other: GIFRect) -> GIFRect {
        if other.isEmpty { return self }
        if isEmpty { return other }
        let l = min(left, other.left), t = min(top, other.top)
        return GIFRect(left: l, top: t, width: max(right, other.right) - l, height: max(bottom, other.bottom) - t)
    }
}
