import Foundation
import Testing
@testable import SharePipe

/// A little-endian TIFF (Exif) structure laid out by hand, so a test can point any offset anywhere.
struct CraftedTIFF {
    /// One 12-byte IFD entry: the value field holds the value (≤ 4 bytes, left-aligned) or an offset.
    struct Entry {
        var tag: UInt16
        var type: UInt16
        var count: UInt32
        var value: UInt32
    }

    var bytes: [UInt8]

    /// `size` bytes: the "II*\0" header pointing at IFD0, then zeros.
    init(size: Int, ifd0: UInt32 = 8) {
        bytes = [0x49, 0x49, 0x2A, 0x00] + CraftedTIFF.le32(ifd0) + [UInt8](repeating: 0, count: max(0, size - 8))
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * UInt32($0))) & 0xFF) } }

    /// Writes an IFD at `offset`: the entry count, the entries, the next-IFD pointer.
    mutating func ifd(at offset: Int, _ entries: [Entry], next: UInt32 = 0) {
        var table = CraftedTIFF.le16(UInt16(entries.count))
        for entry in entries {
            table +=
                CraftedTIFF.le16(entry.tag) + CraftedTIFF.le16(entry.type) + CraftedTIFF.le32(entry.count)
                + CraftedTIFF.le32(entry.value)
        }
        put(table + CraftedTIFF.le32(next), at: offset)
    }

    mutating func put(_ data: [UInt8], at offset: Int) {
        if offset + data.count > bytes.count {
            bytes += [UInt8](repeating: 0, count: offset + data.count - bytes.count)
        }
        bytes.replaceSubrange(offset..<offset + data.count, with: data)
    }

    static func short(_ tag: UInt16, _ value: UInt16) -> Entry {
        Entry(tag: tag, type: 3, count: 1, value: UInt32(value))
    }
    static func long(_ tag: UInt16, _ value: UInt32) -> Entry { Entry(tag: tag, type: 4, count: 1, value: value) }
    static func ascii(_ tag: UInt16, count: Int, at offset: UInt32) -> Entry {
        Entry(tag: tag, type: 2, count: UInt32(count), value: offset)
    }

    /// A typical camera layout: IFD0 (Make "SharePipeCam", Orientation 6, Exif and GPS pointers) at 8, an Exif IFD at 100,
    /// a GPS IFD at 200 whose latitude reference and a "52.5200 N" string sit at 300, a thumbnail IFD at 400
    /// pointing at a fake JPEG thumbnail at 500.
    static func camera() -> CraftedTIFF {
        var tiff = CraftedTIFF(size: 600)
        tiff.put(Array("SharePipeCam\0".utf8), at: 70)
        tiff.ifd(
            at: 8,
            [
                ascii(ExifEditor.Tag.make, count: 13, at: 70), short(ExifEditor.Tag.orientation, 6),
                long(ExifEditor.Tag.exifIFD, 100), long(ExifEditor.Tag.gpsIFD, 200),
            ], next: 400)
        tiff.ifd(at: 100, [short(0xA002, 64)])
        tiff.put(Array("52.5200 N\0".utf8), at: 300)
        tiff.ifd(at: 200, [Entry(tag: 1, type: 2, count: 2, value: 0x4E), ascii(2, count: 10, at: 300)])
        tiff.ifd(at: 400, [long(ExifEditor.Tag.thumbnailOffset, 500), long(ExifEditor.Tag.thumbnailLength, 40)])
        tiff.put([0xFF, 0xD8] + Array("THUMBNAIL-OF-THE-UNCROPPED-ORIGINAL".utf8) + [0xFF, 0xD9], at: 500)
        return tiff
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs anywhere in the bytes.
    func contains(bytes needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}

/// ExifEditor and the `gps` policy on hostile TIFF structures: offsets outside, loops, huge counts, and GPS
/// or location-bearing profiles hidden where a first-IFD-only reader would not look. In `gps` mode an Exif
/// that cannot be cleaned for certain is dropped, never passed through.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct HardeningExifTests {
    /// The `gps`-mode outcome for a JPEG-like ImageInfo carrying `tiff` as its Exif.
    static func gpsOutcome(_ tiff: [UInt8]) -> MetadataOutcome {
        let info = ImageInfo(
            format: .jpeg, size: PixelSize(width: 16, height: 16), colorModel: .rgb, bitDepth: 8,
            progressive: false, orientation: .up, storedOrientationValue: nil, frameCount: 1,
            hasAlpha: false, metadata: [.exif(tiff)], byteCount: 1000)
        return FormatRegistry.jpeg.metadataPolicy.outcome(for: info, mode: .gps)
    }

    static func keptExif(_ outcome: MetadataOutcome) -> [UInt8]? {
        for case .exif(let tiff) in outcome.kept { return tiff }
        return nil
    }

    @Test func cameraLayoutLosesGPSAndThumbnailButKeepsTheRest() throws {
        let tiff = CraftedTIFF.camera().bytes
        let before = try ExifEditor(tiff: tiff)
        #expect(before.hasGPS && before.hasThumbnail && before.orientation == 6)
        let outcome = Self.gpsOutcome(tiff)
        let kept = try #require(Self.keptExif(outcome))
        let after = try ExifEditor(tiff: kept)
        #expect(!after.hasGPS && !after.hasThumbnail)
        #expect(after.orientation == 1)
        #expect(after.string(ExifEditor.Tag.make) == "SharePipeCam")
        #expect(!kept.contains(bytes: Array("52.5200".utf8)), "GPS values must be zeroed, not just unlinked")
        #expect(!kept.contains(bytes: Array("UNCROPPED".utf8)), "the thumbnail image must be zeroed or cut")
        #expect(outcome.removed.isSuperset(of: [.gps, .exifThumbnail]))
    }

    @Test func orphanedBytesBetweenStructuresAreZeroed() throws {
        var tiff = CraftedTIFF.camera()
        tiff.put(Array("ORPHAN 48.8566 N".utf8), at: 130)  // between the Exif IFD (100...117) and the GPS IFD
        let kept = try #require(Self.keptExif(Self.gpsOutcome(tiff.bytes)))
        #expect(!kept.contains(bytes: Array("ORPHAN".utf8)))
        #expect(try ExifEditor(tiff: kept).string(ExifEditor.Tag.make) == "SharePipeCam")
    }

    @Test func ifd0OffsetOutsideTheBlockIsUnreadableAndDroppedInGPSMode() {
        var tiff = CraftedTIFF(size: 64, ifd0: 5000)
        tiff.ifd(at: 8, [CraftedTIFF.long(ExifEditor.Tag.gpsIFD, 30)])
        #expect(throws: ExifEditor.FormatError.self) { try ExifEditor(tiff: tiff.bytes) }
        let outcome = Self.gpsOutcome(tiff.bytes)
        #expect(Self.keptExif(outcome) == nil)
        #expect(outcome.removed.contains(.exif))
        // A block too short for a header, or with no TIFF byte order, is unreadable too.
        #expect(throws: ExifEditor.FormatError.self) { try ExifEditor(tiff: [0x49, 0x49, 0x2A]) }
        #expect(throws: ExifEditor.FormatError.self) { try ExifEditor(tiff: Array("Exif\0\0\0\0\0\0".utf8)) }
    }

    @Test func gpsPointerPastTheBlockLosesOnlyThePointer() throws {
        var tiff = CraftedTIFF.camera()
        tiff.ifd(
            at: 8,
            [
                CraftedTIFF.ascii(ExifEditor.Tag.make, count: 13, at: 70),
                CraftedTIFF.short(ExifEditor.Tag.orientation, 1),
                CraftedTIFF.long(ExifEditor.Tag.exifIFD, 100), CraftedTIFF.long(ExifEditor.Tag.gpsIFD, 90_000),
            ])
        let exif = try ExifEditor(tiff: tiff.bytes)
        #expect(exif.hasGPS)
        var editable = exif
        try editable.removeGPS()
        #expect(!editable.hasGPS)
        let outcome = Self.gpsOutcome(tiff.bytes)
        let kept = try #require(Self.keptExif(outcome), "IFD0 and the Exif IFD stay")
        let after = try ExifEditor(tiff: kept)
        #expect(!after.hasGPS && after.string(ExifEditor.Tag.make) == "SharePipeCam")
        #expect(
            after.entry(
                0xA002,
                inIFDAt: try #require(after.entry(ExifEditor.Tag.exifIFD, inIFDAt: 8).flatMap(after.integerValue)))
                != nil)
        #expect(outcome.removed.contains(.gps) && !outcome.removed.contains(.exif))
        // A GPS IFD that starts inside the block but cannot be read there still drops the whole Exif.
        var inside = CraftedTIFF.camera()
        inside.ifd(at: 8, [CraftedTIFF.long(ExifEditor.Tag.gpsIFD, 590)])
        inside.put(CraftedTIFF.le16(40), at: 590)
        #expect(Self.keptExif(Self.gpsOutcome(inside.bytes)) == nil)
    }

    @Test func gpsPointerWithAStringTypeDropsTheWholeExif() throws {
        var tiff = CraftedTIFF.camera()
        // Type 2 (ASCII) holding 200: not an offset ExifEditor reads, but a lenient reader might follow it.
        tiff.ifd(at: 8, [CraftedTIFF.Entry(tag: ExifEditor.Tag.gpsIFD, type: 2, count: 4, value: 200)])
        #expect(try ExifEditor(tiff: tiff.bytes).hasGPS)
        #expect(Self.keptExif(Self.gpsOutcome(tiff.bytes)) == nil)
    }

    @Test func ifdLoopsEndWithoutHangingAndStillClean() throws {
        var tiff = CraftedTIFF.camera()
        // IFD1 → IFD0 (next-pointer loop); the Exif IFD points at itself; the GPS IFD points back at IFD0.
        tiff.ifd(
            at: 400,
            [
                CraftedTIFF.long(ExifEditor.Tag.thumbnailOffset, 500),
                CraftedTIFF.long(ExifEditor.Tag.thumbnailLength, 40),
            ],
            next: 8)
        tiff.ifd(at: 100, [CraftedTIFF.long(ExifEditor.Tag.exifIFD, 100)])
        tiff.ifd(at: 200, [CraftedTIFF.long(ExifEditor.Tag.exifIFD, 8)])
        let exif = try ExifEditor(tiff: tiff.bytes)
        #expect(exif.walk().complete)
        #expect(exif.walk().ifds.count == 4)
        let kept = try #require(Self.keptExif(Self.gpsOutcome(tiff.bytes)))
        let after = try ExifEditor(tiff: kept)
        #expect(!after.hasGPS && !after.hasThumbnail)
    }

    @Test func hugeCountsAreRefusedOrBoundedNeverTrusted() throws {
        // IFD0 claims 65535 entries in a 64-byte block.
        var tiff = CraftedTIFF(size: 64)
        tiff.put(CraftedTIFF.le16(0xFFFF), at: 8)
        #expect(throws: ExifEditor.FormatError.self) { try ExifEditor(tiff: tiff.bytes) }
        #expect(Self.keptExif(Self.gpsOutcome(tiff.bytes)) == nil)

        // An entry of 4 G doubles (34 GB) at an offset inside the block: readable as a structure, but no
        // accessor may read, zero or keep past the end, and trimming must not "extend" the block.
        var huge = CraftedTIFF(size: 128)
        huge.put(Array("SharePipeCam\0".utf8), at: 60)
        huge.ifd(
            at: 8,
            [
                CraftedTIFF.ascii(ExifEditor.Tag.make, count: 13, at: 60),
                CraftedTIFF.Entry(tag: 0x9286, type: 12, count: 0xFFFF_FFFF, value: 64),
                CraftedTIFF.Entry(tag: ExifEditor.Tag.make, type: 2, count: 0xFFFF_FFFF, value: 64),
            ])
        var exif = try ExifEditor(tiff: huge.bytes)
        #expect(exif.string(ExifEditor.Tag.make) == "SharePipeCam")
        #expect(exif.integerValues(try #require(exif.entry(0x9286, inIFDAt: 8))) == nil)
        exif.trimUnreferencedTail()
        #expect(exif.bytes.count == 128)
        let kept = try #require(Self.keptExif(Self.gpsOutcome(huge.bytes)))
        #expect(kept.count <= 128)
    }

    @Test func gpsLinkedFromTheExifIFDIsFoundAndRemoved() throws {
        var tiff = CraftedTIFF.camera()
        // IFD0 has no GPS pointer; the Exif IFD does (exiftool follows it there too).
        tiff.ifd(at: 8, [CraftedTIFF.long(ExifEditor.Tag.exifIFD, 100)])
        tiff.ifd(at: 100, [CraftedTIFF.short(0xA002, 64), CraftedTIFF.long(ExifEditor.Tag.gpsIFD, 200)])
        #expect(try ExifEditor(tiff: tiff.bytes).hasGPS)
        let kept = try #require(Self.keptExif(Self.gpsOutcome(tiff.bytes)))
        #expect(!(try ExifEditor(tiff: kept).hasGPS))
        #expect(!kept.contains(bytes: Array("52.5200".utf8)))
    }

    @Test func duplicateGPSPointersAreAllRemoved() throws {
        var tiff = CraftedTIFF.camera()
        tiff.ifd(
            at: 8,
            [
                CraftedTIFF.long(ExifEditor.Tag.gpsIFD, 200), CraftedTIFF.short(ExifEditor.Tag.orientation, 1),
                CraftedTIFF.long(ExifEditor.Tag.gpsIFD, 200),
            ])
        let kept = try #require(Self.keptExif(Self.gpsOutcome(tiff.bytes)))
        let after = try ExifEditor(tiff: kept)
        #expect(!after.hasGPS)
        #expect(try after.entries(ofIFDAt: after.ifd0Offset).map(\.tag) == [ExifEditor.Tag.orientation])
    }

    @Test func xmpAndIPTCStoredAsTIFFTagsAreRemovedInGPSMode() throws {
        var tiff = CraftedTIFF(size: 400)
        let xmp = Array("<x:xmpmeta><exif:GPSLatitude>52,31.2N</exif:GPSLatitude></x:xmpmeta>".utf8)
        let iptc: [UInt8] = [0x1C, 0x02, 0x5A, 0x00, 0x06] + Array("Berlin".utf8)
        tiff.put(xmp, at: 100)
        tiff.put(iptc, at: 300)
        tiff.ifd(
            at: 8,
            [
                CraftedTIFF.short(ExifEditor.Tag.orientation, 1),
                CraftedTIFF.Entry(tag: ExifEditor.Tag.xmp, type: 1, count: UInt32(xmp.count), value: 100),
                CraftedTIFF.Entry(tag: ExifEditor.Tag.iptc, type: 7, count: UInt32(iptc.count), value: 300),
            ])
        let exif = try ExifEditor(tiff: tiff.bytes)
        #expect(exif.hasEmbeddedXMP && exif.hasEmbeddedIPTC)
        #expect(MetadataOutcome.kinds(of: [.exif(tiff.bytes)]).isSuperset(of: [.xmp, .iptc]))
        let outcome = Self.gpsOutcome(tiff.bytes)
        let kept = try #require(Self.keptExif(outcome))
        #expect(!kept.contains(bytes: Array("GPSLatitude".utf8)))
        #expect(!kept.contains(bytes: Array("Berlin".utf8)))
        #expect(outcome.removed.isSuperset(of: [.xmp, .iptc]))
    }

    @Test func orientationIsResetWhateverItsIntegerTypeAndRemovedOtherwise() throws {
        var long = CraftedTIFF(size: 64)
        long.ifd(at: 8, [CraftedTIFF.long(ExifEditor.Tag.orientation, 6)])
        var exif = try ExifEditor(tiff: long.bytes)
        #expect(exif.orientation == 6)
        exif.resetOrientation()
        #expect(exif.orientation == 1)

        // Two orientation tags: both must end up 1 (readers disagree on which one counts).
        var twice = CraftedTIFF(size: 64)
        twice.ifd(
            at: 8, [CraftedTIFF.short(ExifEditor.Tag.orientation, 6), CraftedTIFF.short(ExifEditor.Tag.orientation, 8)])
        var both = try ExifEditor(tiff: twice.bytes)
        both.resetOrientation()
        let values = try both.entries(ofIFDAt: 8).compactMap(both.integerValue)
        #expect(values == [1, 1])

        // A signed-short orientation (type 8) is not one we can rewrite: it is removed.
        var signed = CraftedTIFF(size: 64)
        signed.ifd(at: 8, [CraftedTIFF.Entry(tag: ExifEditor.Tag.orientation, type: 8, count: 1, value: 6)])
        var odd = try ExifEditor(tiff: signed.bytes)
        odd.resetOrientation()
        #expect(try odd.entries(ofIFDAt: 8).isEmpty)
    }

    @Test func unreadableThumbnailIFDDropsTheWholeExif() throws {
        var tiff = CraftedTIFF.camera()
        tiff.ifd(at: 8, [CraftedTIFF.short(ExifEditor.Tag.orientation, 1)], next: 70_000)
        #expect(try ExifEditor(tiff: tiff.bytes).hasThumbnail)
        #expect(Self.keptExif(Self.gpsOutcome(tiff.bytes)) == nil)
    }

    @Test func aWalkStopsAtTheIFDCapAndThenCountsAsUnsafe() throws {
        // 200 Exif IFDs, each linking the next: more than any camera writes.
        var tiff = CraftedTIFF(size: 8 + 200 * 18 + 8)
        for index in 0..<200 {
            let offset = 8 + index * 18
            tiff.ifd(at: offset, [CraftedTIFF.long(ExifEditor.Tag.exifIFD, UInt32(offset + 18))])
        }
        let exif = try ExifEditor(tiff: tiff.bytes)
        let walked = exif.walk()
        #expect(!walked.complete && walked.ifds.count == ExifEditor.maxIFDs)
        #expect(exif.hasGPS, "GPS cannot be ruled out past the cap")
        #expect(Self.keptExif(Self.gpsOutcome(tiff.bytes)) == nil)
    }

    @Test func aLongNextIFDChainNeitherRecursesNorHangs() throws {
        // 10 000 empty IFDs chained by next pointers (6 bytes each), walked and trimmed on a thread with a
        // small stack: the walk is iterative and capped.
        var tiff = CraftedTIFF(size: 8 + 10_000 * 6 + 8)
        for index in 0..<10_000 {
            let offset = 8 + index * 6
            tiff.put(CraftedTIFF.le16(0) + CraftedTIFF.le32(UInt32(offset + 6)), at: offset)
        }
        let bytes = tiff.bytes
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var exif = try? ExifEditor(tiff: bytes)
            exif?.trimUnreferencedTail()
            _ = Self.gpsOutcome(bytes)
            done.signal()
        }
        thread.stackSize = 256 << 10
        thread.start()
        #expect(done.wait(timeout: .now() + 30) == .success)
    }

    @Test func noneModePassesAnUnreadableExifThroughUnchanged() {
        let junk = Array("II*\0garbage".utf8)
        let info = ImageInfo(
            format: .jpeg, size: PixelSize(width: 16, height: 16), colorModel: .rgb, bitDepth: 8,
            progressive: false, orientation: .up, storedOrientationValue: nil, frameCount: 1,
            hasAlpha: false, metadata: [.exif(junk)], byteCount: 1000)
        #expect(FormatRegistry.jpeg.metadataPolicy.outcome(for: info, mode: .none).kept == [.exif(junk)])
        #expect(FormatRegistry.jpeg.metadataPolicy.outcome(for: info, mode: .gps).kept.isEmpty)
        #expect(FormatRegistry.jpeg.metadataPolicy.outcome(for: info, mode: .all).kept.isEmpty)
    }

    /// The whole pipeline on a JPEG carrying each hostile Exif, in `gps` mode: it prepares, and the output
    /// has no GPS, no thumbnail, no embedded XMP/IPTC, checked by our reader and by exiftool.
    @Test(arguments: ["camera", "gpsOutside", "loop", "hugeCount", "gpsInExifIFD", "embeddedXMP"])
    func pipelineCleansOrDropsHostileExif(_ name: String) throws {
        var tiff = CraftedTIFF.camera()
        switch name {
        case "gpsOutside": tiff.ifd(at: 8, [CraftedTIFF.long(ExifEditor.Tag.gpsIFD, 90_000)])
        case "loop": tiff.ifd(at: 400, [], next: 8)
        case "hugeCount": tiff.put(CraftedTIFF.le16(0xFFFF), at: 100)
        case "gpsInExifIFD":
            tiff.ifd(at: 8, [CraftedTIFF.long(ExifEditor.Tag.exifIFD, 100)])
            tiff.ifd(at: 100, [CraftedTIFF.long(ExifEditor.Tag.gpsIFD, 200)])
        case "embeddedXMP":
            tiff.put(Array("<x:xmpmeta>GPSLatitude 52,31.2N</x:xmpmeta>".utf8), at: 520)
            tiff.ifd(at: 8, [CraftedTIFF.Entry(tag: ExifEditor.Tag.xmp, type: 1, count: 43, value: 520)])
        default: break
        }
        let jpeg = HardeningJPEG.inserting(
            [(0xE1, JPEGMarkers.exifPrefix + tiff.bytes)],
            into: try Fixtures.bytes(Fixtures.path("jpeg/orient-6.jpg")))
        var options = PrepareOptions()
        options.strip = .gps
        let result = try SharePipe.prepare(.bytes(jpeg), options: options)
        let kinds = try Decode.info(result.bytes).metadataKinds
        #expect(kinds.isDisjoint(with: [.gps, .exifThumbnail, .xmp, .iptc]), "\(kinds)")
        #expect(!result.bytes.contains(bytes: Array("52.5200".utf8)))
        #expect(!result.bytes.contains(bytes: Array("GPSLatitude".utf8)))
        #expect(!result.bytes.contains(bytes: Array("UNCROPPED".utf8)))
        try Witness.require("exiftool")
        do {
            let directory = Fixtures.temporaryDirectory()
            defer { Fixtures.cleanUp(directory) }
            try Fixtures.write(result.bytes, to: directory + "/out.jpg")
            let listing = try Tool.run("exiftool", ["-a", "-G1", "-s", directory + "/out.jpg"]).stdout
            #expect(!listing.contains("GPS"), "\(listing)")
            #expect(!listing.contains("ThumbnailImage"), "\(listing)")
        }
    }
}

/// Building JPEG variants from committed ones.
enum HardeningJPEG {
    /// `jpeg` with marker segments (code, payload) inserted right after SOI.
    static func inserting(_ segments: [(Int, [UInt8])], into jpeg: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        for (code, payload) in segments {
            precondition(payload.count + 2 <= 0xFFFF)
            out += [0xFF, UInt8(code), UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        }
        return out + jpeg.dropFirst(2)
    }

    /// `jpeg` with its baseline/progressive frame header claiming `width`×`height`.
    static func withSize(_ jpeg: [UInt8], width: Int, height: Int) -> [UInt8] {
        var bytes = jpeg
        for index in 0..<(bytes.count - 9)
        where bytes[index] == 0xFF && (bytes[index + 1] == 0xC0 || bytes[index + 1] == 0xC2) {
            bytes[index + 5] = UInt8(height >> 8); bytes[index + 6] = UInt8(height & 0xFF)
            bytes[index + 7] = UInt8(width >> 8); bytes[index + 8] = UInt8(width & 0xFF)
            return bytes
        }
        preconditionFailure("no SOF0/SOF2 in the JPEG")
    }
}
