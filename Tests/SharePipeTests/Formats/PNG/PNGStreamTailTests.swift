import Foundation
import Testing
@testable import SharePipe

/// A PNG whose zlib stream goes on after the last row (here 4 GiB of zeros in 4.3 MB of deflate data): the
/// decoder stops inflating where the image ends and warns, and the job re-encodes the image rather than copy
/// the stream into the output.
@Suite("PNG stream tail")
struct PNGStreamTailTests {
    static let size = 64

    /// The raw image: filter byte 0, then RGB with a pattern that differs on every row (the last one included).
    static func rawRows() -> [UInt8] {
        var raw: [UInt8] = []
        for y in 0..<size {
            raw.append(0)
            for x in 0..<size { raw += [UInt8(x * 4), UInt8(y * 4), UInt8((x + y) & 0xFF)] }
        }
        return raw
    }

    /// A deflate block pair made by zlib (level 9, full flush) from 1 MiB of zeros: byte-aligned and self-contained,
    /// so it can be repeated.
    static let mebibyteOfZeros: [UInt8] = {
        func hex(_ text: String) -> [UInt8] {
            stride(from: 0, to: text.count, by: 2).map { UInt8(text.dropFirst($0).prefix(2), radix: 16)! }
        }
        return hex("ecc13101000000c2a0f54f6d085fa0") + [UInt8](repeating: 0, count: 1016) + hex("3e030000ffff")
    }()

    /// The PNG: the rows in one stored block, then `tailMebibytes` MiB of zeros, the final block and the Adler-32
    /// of everything, in IDAT chunks of 1 MiB.
    static func png(tailMebibytes: Int) -> [UInt8] {
        let raw = rawRows()
        var stream: [UInt8] =
            [
                0x78, 0x01, 0x00, UInt8(raw.count & 0xFF), UInt8(raw.count >> 8),
                UInt8(~raw.count & 0xFF), UInt8((~raw.count >> 8) & 0xFF),
            ] + raw
        stream.reserveCapacity(stream.count + tailMebibytes * mebibyteOfZeros.count + 16)
        for _ in 0..<tailMebibytes { stream += mebibyteOfZeros }
        stream += [0x01, 0x00, 0x00, 0xFF, 0xFF]
        var a: UInt64 = 1, b: UInt64 = 0
        for byte in raw { a = (a + UInt64(byte)) % 65521; b = (b + a) % 65521 }
        b = (b + UInt64(tailMebibytes) * (1 << 20) % 65521 * a) % 65521  // zeros leave a, add a to b each
        stream += Plant.be32(Int(b << 16 | a))
        var png = PNGChunkWalker.signature
        png += PNGChunk(type: .IHDR, data: Plant.be32(size) + Plant.be32(size) + [8, 2, 0, 0, 0]).serialized
        var position = 0
        while position < stream.count {
            let end = min(stream.count, position + (1 << 20))
            png += PNGChunk(type: .IDAT, data: Array(stream[position..<end])).serialized
            position = end
        }
        png += PNGChunk(type: .IEND, data: []).serialized
        return png
    }

    @Test("4 GiB of deflate data after the last row: under 2 s, re-encoded, warned, every row right")
    func longTail() throws {
        let input = Self.png(tailMebibytes: 4096)
        #expect(input.count > 4_000_000)
        // The CPU time of this thread (prepare runs on it), not the wall clock: other tests and other processes
        // share the machine (on a busy one, over twice the wall clock was seen for well under 1 s of work).
        let start = Self.threadCPUSeconds()
        let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: .all))
        let seconds = Self.threadCPUSeconds() - start
        // Under a sanitizer (scripts/sanitize sets SHAREPIPE_SANITIZER) the Swift code runs several times slower.
        // Inflating the 4 GiB would take far longer either way.
        let bound = ProcessInfo.processInfo.environment["SHAREPIPE_SANITIZER"] == nil ? 2.0 : 8.0
        #expect(seconds < bound, "took \(seconds) s of CPU")
        #expect(result.method == .reencoded, "the stream after the image must not be copied")
        #expect(result.bytes.count < 100_000, "\(result.bytes.count) bytes")
        #expect(result.warnings.contains(PNGDecoder.tailWarning), "\(result.warnings)")
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.size == PixelSize(width: Self.size, height: Self.size))
        for (x, y) in [(0, 0), (63, 0), (5, 40), (63, 63), (0, 63)] {
            #expect(bitmap.rgb(x, y) == [x * 4, y * 4, (x + y) & 0xFF], "pixel \(x),\(y)")
        }
        print("PNG stream tail: \(input.count) bytes in, 4 GiB tail, prepared in \(String(format: "%.3f", seconds)) s")
    }

    @Test("a stream that ends with the image is copied; a short tail (1 MiB in 1 KB) is re-encoded too")
    func shortAndNoTail() throws {
        let clean = try SharePipe.prepare(.bytes(Self.png(tailMebibytes: 0)), options: PrepareOptions(strip: .all))
        #expect(clean.method == .metadataRewrite)
        #expect(!clean.warnings.contains(PNGDecoder.tailWarning))
        let short = try SharePipe.prepare(.bytes(Self.png(tailMebibytes: 1)), options: PrepareOptions(strip: .all))
        #expect(short.method == .reencoded)
        #expect(short.warnings.contains(PNGDecoder.tailWarning), "\(short.warnings)")
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
