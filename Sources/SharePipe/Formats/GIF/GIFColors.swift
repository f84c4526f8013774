/// Maps colours to the nearest entry of a palette (squared RGB distance; of equally near entries, the lowest
/// index), exactly as a scan of every entry would, but without scanning:
/// - a direct-mapped cache of recent colours (neighbouring pixels and successive frames repeat colours);
/// - on a miss, the colour's cell of 8×8×8 colours (5 bits a channel) lists the only entries that can be
///   nearest to any colour in it (an inverse colour map made lazily, cell by cell, as in Heckbert's locally
///   sorted search): an entry whose nearest point of the cell is farther than some entry's farthest point
///   never wins there. The list is in order of that nearest-point distance, so a lookup stops at the first
///   entry that cannot be nearer than the best so far;
/// - cells with long lists (palettes crowded far away) are searched instead, walking the entries in order
///   of green outwards from the colour's green and stopping once green alone is farther than the best match.
final class GIFNearestColor {
    let palette: GIFPalette
    /// An index that must never be chosen (the frame's transparent index).
    let excluded: Int?
    private static let cacheBits = 14
    private let keys: UnsafeMutablePointer<UInt32>
    private let values: UnsafeMutablePointer<UInt8>
    /// A candidate entry, green first.
    private struct Entry {
        var g: Int32, r: Int32, b: Int32, index: Int32
    }
    /// The candidate entries sorted by (green, index).
    private let sorted: UnsafeMutablePointer<Entry>
    private let candidates: Int
    /// Per cell (r >> 3, g >> 3, b >> 3): 0 while not listed yet, `searchCell` when its list would be long,
    /// else `(offset + 1) << 6 | count` of its list in `lists`.
    private let cells: UnsafeMutablePointer<UInt32>
    private static let searchCell = UInt32.max
    /// Longest list a cell keeps; beyond it the cell is searched.
    private static let longestCellList = 48
    /// The cells' lists, one word per entry: the squared distance from the cell to the entry in the high 32
    /// bits, then index, blue, green, red bytes; each list sorted by distance, then index.
    private var lists: UnsafeMutablePointer<UInt64>
    private var listsCount = 0, listsCapacity = 4096

    init(palette: GIFPalette, excluding excluded: Int? = nil) {
        precondition(palette.count > 0 && (excluded == nil || palette.count > 1), "nothing to map to")
        self.palette = palette
        self.excluded = excluded
        let slots = 1 << Self.cacheBits
        keys = .allocate(capacity: slots)
        keys.initialize(repeating: UInt32.max, count: slots)  // no colour has all 32 bits set
        values = .allocate(capacity: slots)
        values.initialize(repeating: 0, count: slots)
        cells = .allocate(capacity: 32768)
        cells.initialize(repeating: 0, count: 32768)
        lists = .allocate(capacity: listsCapacity)
        var entries: [Entry] = []
        for entry in 0..<palette.count where entry != excluded {
            let (r, g, b) = palette.color(entry)
            entries.append(Entry(g: Int32(g), r: Int32(r), b: Int32(b), index: Int32(entry)))
        }
        entries.sort { $0.g != $1.g ? $0.g < $1.g : $0.index < $1.index }
        candidates = entries.count
        sorted = .allocate(capacity: entries.count)
        sorted.initialize(from: entries, count: entries.count)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
        sorted.deallocate()
        cells.deallocate()
        lists.deallocate()
    }

    /// Whether this mapper maps to `palette` without `excluded` (and so can be used again for them).
    func serves(_ palette: GIFPalette, excluding excluded: Int?) -> Bool {
        self.excluded == excluded && self.palette.rgb == palette.rgb
    }

    /// The index of the nearest entry to (r, g, b).
    @inline(__always)
    func index(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Int {
        let key = UInt32(r) << 16 | UInt32(g) << 8 | UInt32(b)
        let slot = Int((key &* 0x9E37_79B1) >> UInt32(32 - Self.cacheBits))
        if keys[slot] == key { return Int(values[slot]) }
        let found = lookUp(Int32(r), Int32(g), Int32(b))
        keys[slot] = key
        values[slot] = UInt8(found)
        return found
    }

    /// The nearest entry from the colour's cell list (listing the cell first), or by search.
    private func lookUp(_ r: Int32, _ g: Int32, _ b: Int32) -> Int {
        let cell = Int(r >> 3) << 10 | Int(g >> 3) << 5 | Int(b >> 3)
        var list = cells[cell]
        if list == 0 {
            list = listCell(cell)
            cells[cell] = list
        }
        if list == Self.searchCell { return Int(nearestEntry(r, g, b).index) }
        let start = Int(list >> 6) - 1, count = Int(list & 63)
        var best = Int32.max, bestIndex = Int32.max
        for word in UnsafeBufferPointer(start: lists + start, count: count) {
            // No later entry of the list can be nearer, nor as near (its distance to the cell is a floor).
            if Int32(truncatingIfNeeded: word >> 32) > best { break }
            let dr = Int32(word & 0xFF) - r, dg = Int32((word >> 8) & 0xFF) - g
            let db = Int32((word >> 16) & 0xFF) - b
            let d = dr * dr + dg * dg + db * db
            let index = Int32((word >> 24) & 0xFF)
            if d < best || (d == best && index < bestIndex) {
                best = d
                bestIndex = index
            }
        }
        return Int(bestIndex)
    }

    /// The cell's list word (see `cells`): the entries whose nearest point of the cell is no farther than
    /// the farthest point of the cell from the entry nearest its centre.
    private func listCell(_ cell: Int) -> UInt32 {
        let lowR = Int32(cell >> 10) << 3, lowG = Int32((cell >> 5) & 31) << 3, lowB = Int32(cell & 31) << 3
        // Any colour of the cell is at most `reach` from this entry, so its nearest entry is too; an entry
        // farther than `reach` from the whole cell is never nearest in it.
        let centre = nearestEntry(lowR + 4, lowG + 4, lowB + 4)
        let fr = max(centre.r - lowR, lowR + 7 - centre.r), fg = max(centre.g - lowG, lowG + 7 - centre.g)
        let fb = max(centre.b - lowB, lowB + 7 - centre.b)
        let reach = fr * fr + fg * fg + fb * fb
        if listsCount + Self.longestCellList > listsCapacity {
            let grown = UnsafeMutablePointer<UInt64>.allocate(capacity: listsCapacity * 2)
            grown.moveInitialize(from: lists, count: listsCount)
            lists.deallocate()
            lists = grown
            listsCapacity *= 2
        }
        let list = lists + listsCount
        var count = 0
        // Entries by green from the first whose green can be within reach of the cell.
        var position = 0, high = candidates
        while position < high {
            let mid = (position + high) / 2
            let below = lowG - sorted[mid].g
            if below > 0 && below * below > reach { position = mid + 1 } else { high = mid }
        }
        while position < candidates {
            let e = sorted[position]
            position += 1
            let ng = e.g < lowG ? lowG - e.g : e.g > lowG + 7 ? e.g - lowG - 7 : 0
            if e.g > lowG && ng * ng > reach { break }
            let nr = e.r < lowR ? lowR - e.r : e.r > lowR + 7 ? e.r - lowR - 7 : 0
            let nb = e.b < lowB ? lowB - e.b : e.b > lowB + 7 ? e.b - lowB - 7 : 0
            let distance = nr * nr + ng * ng + nb * nb
            guard distance <= reach else { continue }
            if count == Self.longestCellList { return Self.searchCell }
            // Insert in order of (distance, index): the key is the word itself.
            let word =
                UInt64(distance) << 32 | UInt64(e.index) << 24 | UInt64(e.b) << 16 | UInt64(e.g) << 8 | UInt64(e.r)
            var slot = count
            while slot > 0 && list[slot - 1] > word {
                list[slot] = list[slot - 1]
                slot -= 1
            }
            list[slot] = word
            count += 1
        }
        let start = listsCount
        listsCount += count
        return UInt32(start + 1) << 6 | UInt32(count)
    }

    /// The nearest entry by a walk of the entries in order of green outwards from `g`, stopping once green
    /// alone is farther than the best match.
    private func nearestEntry(_ r: Int32, _ g: Int32, _ b: Int32) -> Entry {
        // The first entry with green ≥ g, then outwards in both directions.
        var low = 0, high = candidates
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid].g < g { low = mid + 1 } else { high = mid }
        }
        var best = Int32.max, bestEntry = sorted[0]
        bestEntry.index = Int32.max
        var up = low, down = low - 1
        while up < candidates || down >= 0 {
            if up < candidates {
                let e = sorted[up]
                let dg = e.g - g
                if dg * dg > best {
                    up = candidates
                } else {
                    let dr = e.r - r, db = e.b - b
                    let d = dr * dr + dg * dg + db * db
                    if d < best || (d == best && e.index < bestEntry.index) { best = d; bestEntry = e }
                    up += 1
                }
            }
            if down >= 0 {
                let e = sorted[down]
                let dg = g - e.g
                if dg * dg > best {
                    down = -1
                } else {
                    let dr = e.r - r, db = e.b - b
                    let d = dr * dr + dg * dg + db * db
                    if d < best || (d == best && e.index < bestEntry.index) { best = d; bestEntry = e }
                    down -= 1
                }
            }
        }
        return bestEntry
    }
}

/// Builds palettes: the exact colours when there are few enough, otherwise a median cut (boxes split at
/// the weighted median of their widest channel, each colour the weighted mean of its box).
enum GIFQuantizer {
    /// A weighted colour.
    struct Sample {
        var r: UInt8, g: UInt8, b: UInt8
        var weight: Int
    }

    /// The distinct colours of `pixels` (RGBA, only entries whose alpha ≥ 128 count) when there are at most
    /// `limit`, else nil.
    static func exactColors(rgba pixels: UnsafeBufferPointer<UInt8>, limit: Int) -> [Sample]? {
        var table: [UInt32: Int] = [:]
        var index = 0
        while index + 3 < pixels.count {
            if pixels[index + 3] >= 128 {
                let key = UInt32(pixels[index]) << 16 | UInt32(pixels[index + 1]) << 8 | UInt32(pixels[index + 2])
                table[key, default: 0] += 1
                if table.count > limit { return nil }
            }
            index += 4
        }
        return table.sorted { $0.key < $1.key }.map {
            Sample(r: UInt8($0.key >> 16), g: UInt8(($0.key >> 8) & 0xFF), b: UInt8($0.key & 0xFF), weight: $0.value)
        }
    }

    /// A 15-bit histogram (5 bits per channel) of the opaque pixels, as samples carrying their bin's mean colour.
    static func histogram(rgba pixels: UnsafeBufferPointer<UInt8>) -> [Sample] {
        // Per bin: the pixel count, then the sums of red, green and blue.
        var bins = [Int](repeating: 0, count: 32768 * 4)
        bins.withUnsafeMutableBufferPointer { binsBuffer in
            let bins = binsBuffer.baseAddress!
            guard let source = pixels.baseAddress else { return }
            var index = 0
            while index + 3 < pixels.count {
                if source[index + 3] >= 128 {
                    let r = Int(source[index]), g = Int(source[index + 1]), b = Int(source[index + 2])
                    let bin = ((r >> 3) << 10 | (g >> 3) << 5 | (b >> 3)) * 4
                    bins[bin] += 1
                    bins[bin + 1] += r
                    bins[bin + 2] += g
                    bins[bin + 3] += b
                }
                index += 4
            }
        }
        var samples: [Sample] = []
        for bin in stride(from: 0, to: bins.count, by: 4) where bins[bin] > 0 {
            let n = bins[bin]
            samples.append(
                Sample(
                    r: UInt8((bins[bin + 1] + n / 2) / n), g: UInt8((bins[bin + 2] + n / 2) / n),
                    b: UInt8((bins[bin + 3] + n / 2) / n), weight: n))
        }
        return samples
    }

    /// A palette of at most `maxColors` entries for the opaque pixels of `pixels` (RGBA): exact when the
    /// pixels have that few colours, otherwise a median cut of their histogram. At least one entry.
    static func palette(rgba pixels: UnsafeBufferPointer<UInt8>, maxColors: Int) -> GIFPalette {
        if let exact = exactColors(rgba: pixels, limit: maxColors) {
            return GIFPalette(rgb: exact.isEmpty ? [0, 0, 0] : exact.flatMap { [$0.r, $0.g, $0.b] })
        }
        return medianCut(histogram(rgba: pixels), maxColors: maxColors)
    }

    /// Reduces weighted colours to at most `maxColors` by median cut.
    static func medianCut(_ samples: [Sample], maxColors: Int) -> GIFPalette {
        guard !samples.isEmpty else { return GIFPalette(rgb: [0, 0, 0]) }
        let target = max(1, min(256, maxColors))
        if samples.count <= target { return GIFPalette(rgb: samples.flatMap { [$0.r, $0.g, $0.b] }) }
        var boxes: [Box] = [Box(samples)]
        while boxes.count < target {
            // Split the box with the largest (widest range × √weight); stop when none can be split.
            // (The first of equal scores, as `max(by:)` over the splittable boxes would find.)
            var found: Int?, bestScore = 0.0
            for index in boxes.indices where boxes[index].samples.count > 1 && boxes[index].range > 0 {
                if found == nil || boxes[index].score > bestScore {
                    found = index
                    bestScore = boxes[index].score
                }
            }
            guard let best = found else { break }
            let box = boxes[best]
            let channel = box.channel
            let sorted = sortedStably(box.samples, byChannel: channel)
            var running = 0, cut = 1
            for (index, sample) in sorted.enumerated() {
                running += sample.weight
                if running * 2 >= box.weight { cut = index + 1; break }
            }
            cut = min(max(cut, 1), sorted.count - 1)
            boxes[best] = Box(Array(sorted[..<cut]))
            boxes.append(Box(Array(sorted[cut...])))
        }
        var rgb: [UInt8] = []
        for box in boxes {
            let weight = max(1, box.weight)
            var r = 0, g = 0, b = 0
            for sample in box.samples {
                r += Int(sample.r) * sample.weight
                g += Int(sample.g) * sample.weight
                b += Int(sample.b) * sample.weight
            }
            rgb += [
                UInt8((r + weight / 2) / weight), UInt8((g + weight / 2) / weight), UInt8((b + weight / 2) / weight),
            ]
        }
        return GIFPalette(rgb: rgb)
    }

    /// A median-cut box with its widest channel, computed once.
    private struct Box {
        var samples: [Sample]
        var weight = 0
        var channel = 0
        var range = 0
        var score: Double { Double(range) * (Double(weight).squareRoot() + 1) }

        init(_ samples: [Sample]) {
            self.samples = samples
            var low = (255, 255, 255), high = (0, 0, 0)
            for sample in samples {
                weight += sample.weight
                let r = Int(sample.r), g = Int(sample.g), b = Int(sample.b)
                low = (min(low.0, r), min(low.1, g), min(low.2, b))
                high = (max(high.0, r), max(high.1, g), max(high.2, b))
            }
            let ranges = [high.0 - low.0, high.1 - low.1, high.2 - low.2]
            range = ranges.max()!
            channel = ranges.firstIndex(of: range)!
        }
    }

    /// A palette reduced to at most `maxColors` entries, weighting each entry by `usage` (1 each when nil).
    static func reduce(_ palette: GIFPalette, to maxColors: Int, usage: [Int]? = nil) -> GIFPalette {
        if palette.count <= maxColors { return palette }
        var samples: [Sample] = []
        for entry in 0..<palette.count {
            let weight = usage.map { entry < $0.count ? $0[entry] : 0 } ?? 1
            if usage != nil && weight == 0 { continue }
            let (r, g, b) = palette.color(entry)
            samples.append(Sample(r: r, g: g, b: b, weight: max(weight, 1)))
        }
        if samples.isEmpty { return GIFPalette(rgb: Array(palette.rgb.prefix(maxColors * 3))) }
        return medianCut(samples, maxColors: maxColors)
    }

    private static func value(_ sample: Sample, _ channel: Int) -> UInt8 {
        channel == 0 ? sample.r : channel == 1 ? sample.g : sample.b
    }

    /// `samples` in order of one channel's value, equal values in their given order: what a stable sort gives,
    /// as a counting sort (linear in the samples; the median cut's sorts were most of its time).
    static func sortedStably(_ samples: [Sample], byChannel channel: Int) -> [Sample] {
        var next = [Int](repeating: 0, count: 257)
        for sample in samples { next[Int(value(sample, channel)) + 1] += 1 }
        for key in 1...256 { next[key] += next[key - 1] }
        return [Sample](unsafeUninitializedCapacity: samples.count) { buffer, initialized in
            for sample in samples {
                let key = Int(value(sample, channel))
                (buffer.baseAddress! + next[key]).initialize(to: sample)
                next[key] += 1
            }
            initialized = samples.count
        }
    }

}
