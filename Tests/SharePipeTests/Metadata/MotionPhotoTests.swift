import Foundation
import Testing
@testable import SharePipe

/// Motion photos: the video a photo hides after its image (Google's Motion Photo XMP, the older MicroVideo XMP,
/// Samsung's SEFT trailer, an unannounced MP4; Samsung's HEIC `mpvd` box). Under `all` and `gps` no byte of the
/// video or its location reaches any output, and the report names it with its sound and location; under `none`
/// only the metadata-only copy keeps it, with the XMP that locates it still right. The clips are made here by
/// ffmpeg (H.264 + AAC with a location tag), the still too; the motion photos are assembled by the test.
@Suite("Motion photos", .tags(.witness), .skipped(whenListed: "witness"))
struct MotionPhotoTests {
    static let location = "+48.8577+002.2950/"

    struct Made: Sendable {
        /// A 320×240 baseline JPEG.
        var still: [UInt8]
        /// H.264 + AAC, with `location` as QuickTime `keys` metadata and a 3GPP `loci` box.
        var clip: [UInt8]
        /// H.264 only, no location.
        var silentClip: [UInt8]
    }

    struct FFmpegFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// The fixtures, made once per run by ffmpeg (tests call `Witness.require("ffmpeg")` first, so a missing
    /// ffmpeg fails them naming it).
    static let made: Result<Made, any Error> = Result {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        func ffmpeg(_ arguments: [String]) throws {
            let run = try Tool.run("ffmpeg", ["-v", "error", "-y"] + arguments)
            guard run.status == 0 else { throw FFmpegFailed(description: "ffmpeg \(arguments): \(run.stderr)") }
        }
        let picture = ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=10"]
        try ffmpeg(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=1", "-frames:v", "1", directory + "/still.jpg"])
        try ffmpeg(
            picture + [
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000", "-t", "0.5", "-c:v", "libx264",
                "-pix_fmt", "yuv420p", "-c:a", "aac", "-metadata", "location=\(location)", "-movflags",
                "+use_metadata_tags", directory + "/clip.mp4",
            ])
        try ffmpeg(picture + ["-t", "0.5", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-an", directory + "/silent.mp4"])
        return Made(
            still: try Fixtures.bytes(directory + "/still.jpg"), clip: try Fixtures.bytes(directory + "/clip.mp4"),
            silentClip: try Fixtures.bytes(directory + "/silent.mp4"))
    }

    static func fixtures() throws -> Made {
        try Witness.require("ffmpeg", "ffprobe")
        return try made.get()
    }

    // MARK: Building motion photos

    /// The ways a JPEG carries its video.
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case googleContainer, microVideo, samsungTrailer, unannounced
        var testDescription: String { rawValue }

        var container: EmbeddedVideo.Container {
            switch self {
            case .googleContainer: return .motionPhoto
            case .microVideo: return .microVideo
            case .samsungTrailer: return .samsungTrailer
            case .unannounced: return .unannounced
            }
        }
    }

    static let namespaces =
        #"xmlns:GCamera="http://ns.google.com/photos/1.0/camera/" xmlns:Container="http://ns.google.com/photos/1.0/container/" xmlns:Item="http://ns.google.com/photos/1.0/container/item/""#

    /// An XMP APP1 segment whose description has `attributes` and `children`.
    static func xmp(attributes: String, children: String = "") -> (code: UInt8, payload: [UInt8]) {
        let packet =
            #"<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">"#
            + #"<rdf:Description rdf:about="" \#(namespaces) xmlns:dc="http://purl.org/dc/elements/1.1/" \#(attributes)>"#
            + #"<dc:creator><rdf:Seq><rdf:li>SP-CREATOR</rdf:li></rdf:Seq></dc:creator>"#
            + children + "</rdf:Description></rdf:RDF></x:xmpmeta>"
        return (0xE1, JPEGMarkers.xmpPrefix + Array(packet.utf8))
    }

    /// A `Container:Directory` with the primary image and `items` (semantic, length).
    static func directory(_ items: [(semantic: String, mime: String, length: Int)]) -> String {
        let primary = (semantic: "Primary", mime: "image/jpeg", length: 0)
        let entries = ([primary] + items).map {
            #"<rdf:li rdf:parseType="Resource"><Container:Item Item:Mime="\#($0.mime)" Item:Semantic="\#($0.semantic)" Item:Length="\#($0.length)" Item:Padding="0"/></rdf:li>"#
        }
        return "<Container:Directory><rdf:Seq>" + entries.joined() + "</rdf:Seq></Container:Directory>"
    }

    /// Samsung's trailer: an `Image_UTC_Data` entry, a `MotionPhoto_Data` entry holding `video`, the `SEFH`
    /// directory, its length and `SEFT`.
    static func samsungTrailer(_ video: [UInt8]) -> [UInt8] {
        let entries: [(type: [UInt8], name: String, data: [UInt8])] = [
            ([0x01, 0x0A], "Image_UTC_Data", Array("1705124333853".utf8)),
            ([0x30, 0x0A], "MotionPhoto_Data", video),
        ]
        var area: [UInt8] = []
        var records: [(type: [UInt8], start: Int, length: Int)] = []
        for entry in entries {
            let bytes = [0, 0] + entry.type + Plant.le32(entry.name.utf8.count) + Array(entry.name.utf8) + entry.data
            records.append((entry.type, area.count, bytes.count))
            area += bytes
        }
        var directory = Array("SEFH".utf8) + Plant.le32(107) + Plant.le32(records.count)
        for record in records {
            directory += [0, 0] + record.type + Plant.le32(area.count - record.start) + Plant.le32(record.length)
        }
        return area + directory + Plant.le32(directory.count) + Array("SEFT".utf8)
    }

    static func motionPhoto(_ kind: Kind, still: [UInt8], video: [UInt8]) -> [UInt8] {
        switch kind {
        case .googleContainer:
            let segment = xmp(
                attributes:
                    #"GCamera:MotionPhoto="1" GCamera:MotionPhotoVersion="1" GCamera:MotionPhotoPresentationTimestampUs="250000""#,
                children: directory([("MotionPhoto", "video/mp4", video.count)]))
            return Plant.jpeg(still, segments: [segment]) + video
        case .microVideo:
            let segment = xmp(
                attributes:
                    #"GCamera:MicroVideo="1" GCamera:MicroVideoVersion="1" GCamera:MicroVideoOffset="\#(video.count)" GCamera:MicroVideoPresentationTimestampUs="250000""#
            )
            return Plant.jpeg(still, segments: [segment]) + video
        case .samsungTrailer:
            return still + samsungTrailer(video)
        case .unannounced:
            return still + video
        }
    }

    /// The routes a JPEG input can take.
    static let routes:
        [(name: String, configure: @Sendable (inout PrepareOptions) -> Void, method: PreparationMethod)] = [
            ("metadata rewrite", { _ in }, .metadataRewrite),
            ("re-encode", { $0.maxShortEdge = 120 }, .reencoded),
            ("format change", { $0.acceptedFormats = [.png] }, .reencoded),
        ]

    /// No piece of the clip (its box types, its brand, its location, its encoder tag) in `output`.
    static func expectNoVideo(_ output: [UInt8], _ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for needle in ["ftyp", "moov", "mdat", "isom", "SoundHandler", location, "+48.8577", "Lavf"] {
            #expect(
                !LeakScanner.contains(output, Array(needle.utf8)), "\(context): \(needle) is in the output",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: Tests

    /// The fixture clip is what the tests need it to be, as ffprobe reads it: sound, and the location tag.
    @Test func theClipHasSoundAndALocationAsFFprobeReadsIt() throws {
        let made = try Self.fixtures()
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(made.clip, to: directory + "/clip.mp4")
        let probe = try Tool.run("ffprobe", ["-v", "error", "-show_streams", "-show_format", directory + "/clip.mp4"])
        #expect(probe.stdout.contains("codec_type=audio") && probe.stdout.contains("codec_name=aac"), "\(probe.stdout)")
        #expect(probe.stdout.contains("TAG:location=\(Self.location)"), "\(probe.stdout)")
        #expect(LeakScanner.contains(made.clip, Array(Self.location.utf8)))
    }

    /// Each kind is found, with its sound and location, and nothing of it survives `all` or `gps` on any
    /// route; the report names it.
    @Test(arguments: Kind.allCases)
    func theVideoIsFoundAndNeverWrittenUnderAllOrGPS(_ kind: Kind) throws {
        let made = try Self.fixtures()
        let input = Self.motionPhoto(kind, still: made.still, video: made.clip)
        let video = try #require(try SharePipe.inspect(.bytes(input)).embeddedVideo, "\(kind): no video found")
        #expect(video.container == kind.container)
        #expect(video.readable && video.hasAudio && video.hasLocation, "\(kind): \(video)")
        #expect(video.byteCount == made.clip.count, "\(kind): \(video.byteCount) of \(made.clip.count)")
        for mode in [StripMode.all, .gps] {
            for route in Self.routes {
                var options = PrepareOptions(strip: mode)
                route.configure(&options)
                let result = try SharePipe.prepare(.bytes(input), options: options)
                let context = "\(kind), \(route.name), strip \(mode)"
                #expect(result.method == route.method, "\(context)")
                Self.expectNoVideo(result.bytes, context)
                #expect(result.removedMetadata.contains(.embeddedVideo), "\(context): \(result.removedMetadata)")
                #expect(!result.keptMetadata.contains(.embeddedVideo), "\(context)")
                #expect(result.embeddedVideo == video, "\(context)")
                #expect(try SharePipe.inspect(.bytes(result.bytes)).embeddedVideo == nil, "\(context)")
            }
        }
    }

    /// A clip without sound or location is reported as such: the flags come from its boxes.
    @Test func aSilentClipWithoutLocationIsReportedSo() throws {
        let made = try Self.fixtures()
        for kind in [Kind.googleContainer, .unannounced] {
            let input = Self.motionPhoto(kind, still: made.still, video: made.silentClip)
            let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: .all))
            let video = try #require(result.embeddedVideo, "\(kind)")
            #expect(video.readable && !video.hasAudio && !video.hasLocation, "\(kind): \(video)")
            #expect(result.removedMetadata.contains(.embeddedVideo))
            #expect(video.summary.contains("no audio, no location tags"), "\(video.summary)")
        }
    }

    /// Under `none` the metadata-only copy keeps the video byte for byte, where its announcements locate it;
    /// every other route leaves it out, says so, and takes its announcements out of the XMP.
    @Test(arguments: Kind.allCases)
    func underNoneOnlyTheCopyKeepsItAndTheXMPStaysTrue(_ kind: Kind) throws {
        let made = try Self.fixtures()
        let input = Self.motionPhoto(kind, still: made.still, video: made.clip)
        let copy = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: .none))
        #expect(copy.method == .metadataRewrite)
        #expect(copy.keptMetadata.contains(.embeddedVideo) && !copy.removedMetadata.contains(.embeddedVideo))
        #expect(!copy.adjustments.contains { $0.hasPrefix("embedded video removed") }, "\(copy.adjustments)")
        let start = try #require(
            copy.bytes.firstRange(of: made.clip)?.lowerBound, "\(kind): the clip is not in the copy")
        let kept = try #require(try SharePipe.inspect(.bytes(copy.bytes)).embeddedVideo)
        #expect(kept.container == kind.container && kept.offset == start && kept.byteCount == made.clip.count)
        // Where the announcements say the video starts, it starts.
        let hints = MotionPhotoXMP.Hints(try SharePipe.inspect(.bytes(copy.bytes)).metadata)
        switch kind {
        case .googleContainer, .microVideo:
            #expect(hints.videoStarts(fileSize: copy.bytes.count).first == start, "\(kind)")
        case .samsungTrailer:
            let trailer = try #require(try SamsungTrailer.read(HEIFFileBytes(memory: copy.bytes)))
            #expect(trailer.motionPhotoData == start..<(start + made.clip.count))
        case .unannounced:
            #expect(copy.bytes.count == start + made.clip.count)
        }

        // The copy over the byte limit: the job goes on as a re-encode, which leaves the video out.
        let overLimit: @Sendable (inout PrepareOptions) -> Void = { [limit = copy.bytes.count - 1] in
            $0.maxBytes = limit
        }
        for route in Self.routes.dropFirst() + [("copy over the byte limit", overLimit, .reencoded)] {
            var options = PrepareOptions(strip: .none)
            route.configure(&options)
            let result = try SharePipe.prepare(.bytes(input), options: options)
            let context = "\(kind), \(route.name), strip none"
            #expect(result.method == route.method, "\(context)")
            Self.expectNoVideo(result.bytes, context)
            #expect(result.removedMetadata.contains(.embeddedVideo), "\(context)")
            #expect(
                result.adjustments.contains("embedded video removed: only a metadata-only copy of a JPEG keeps it"),
                "\(context): \(result.adjustments)")
            #expect(result.embeddedVideo?.hasAudio == true && result.embeddedVideo?.hasLocation == true, "\(context)")
            // The XMP stays (as APP1, or a PNG's iTXt) without a word about the video.
            #expect(!MotionPhotoXMP.mentionsVideo(result.bytes), "\(context)")
            #expect(!LeakScanner.contains(result.bytes, Array("Container:Directory".utf8)), "\(context)")
            if kind == .googleContainer || kind == .microVideo {
                #expect(LeakScanner.contains(result.bytes, Array("SP-CREATOR".utf8)), "\(context): the XMP went")
            }
        }
    }

    /// A gain map between the image and the video (Pixel's Ultra HDR motion photos): the copy leaves it out, so
    /// its directory item goes too and the video's item still locates the video.
    @Test func theCopyDropsTheGainMapsDirectoryItem() throws {
        let made = try Self.fixtures()
        let gainMap = made.still
        let segment = Self.xmp(
            attributes: #"GCamera:MotionPhoto="1""#,
            children: Self.directory([
                ("GainMap", "image/jpeg", gainMap.count), ("MotionPhoto", "video/mp4", made.clip.count),
            ])
        )
        let input = Plant.jpeg(made.still, segments: [segment]) + gainMap + made.clip
        let copy = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: .none))
        #expect(copy.keptMetadata.contains(.embeddedVideo))
        #expect(copy.bytes.count < input.count - gainMap.count + 200, "the gain map is still in the copy")
        let packets = try SharePipe.inspect(.bytes(copy.bytes)).metadata.compactMap { block -> [UInt8]? in
            if case .xmp(let packet) = block { return packet } else { return nil }
        }
        let items = MotionPhotoXMP.items(try #require(packets.first))
        #expect(items.map(\.semantic) == ["Primary", "MotionPhoto"])
        let start = copy.bytes.count - made.clip.count
        #expect(Array(copy.bytes[start...]) == made.clip)
        #expect(MotionPhotoXMP.Hints([.xmp(packets[0])]).videoStarts(fileSize: copy.bytes.count) == [start])
    }

    /// Damaged motion photos (cut anywhere, bytes flipped): never a crash, and whatever is prepared under
    /// `all` holds no part of the video.
    @Test func damagedMotionPhotosNeverLeakOrCrash() throws {
        let made = try Self.fixtures()
        for kind in Kind.allCases {
            let input = Self.motionPhoto(kind, still: made.still, video: made.clip)
            let imageEnd = try #require(try JPEGImageEnd.offset(.bytes(input)))
            // Damage only the part after the image, where the detector reads.
            for damaged in Fixtures.damagedCopies(of: Array(input[imageEnd...]), cuts: 24, flips: 24, seed: 7) {
                let file = Array(input[..<imageEnd]) + damaged
                guard let result = try? SharePipe.prepare(.bytes(file), options: PrepareOptions(strip: .all)) else {
                    continue
                }
                for needle in ["moov", Self.location] {
                    #expect(!LeakScanner.contains(result.bytes, Array(needle.utf8)), "\(kind): \(needle)")
                }
            }
        }
    }

    /// Hostile MP4 boxes: a `moov` nested far past the depth limit, a `keys` box claiming four billion keys,
    /// sizes past the end. The walk ends, bounded; what it reads in bounds it reports.
    @Test func hostileBoxesAreBounded() throws {
        func box(_ type: [UInt8], _ body: [UInt8]) -> [UInt8] { Plant.be32(8 + body.count) + type + body }
        let ftyp = box(Array("ftyp".utf8), Array("isom".utf8) + [0, 0, 2, 0])
        var nested = box([0xA9, 0x78, 0x79, 0x7A], [0, 4, 0, 0] + Array(Self.location.utf8))
        for _ in 0..<5000 { nested = box(Array("udta".utf8), nested) }
        let keys = box(Array("keys".utf8), [0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF] + Plant.be32(300) + Array("mdta".utf8))
        let meta = box(Array("meta".utf8), [0, 0, 0, 0] + keys)
        let hdlr = box(
            Array("hdlr".utf8), [UInt8](repeating: 0, count: 8) + Array("soun".utf8) + [UInt8](repeating: 0, count: 12))
        let trak = box(Array("trak".utf8), box(Array("mdia".utf8), hdlr))
        let shallowLocation = box(Array("udta".utf8), box(Array("loci".utf8), [0, 0, 0, 0]))
        let moov = box(Array("moov".utf8), nested + meta + trak + shallowLocation)
        let file = HEIFFileBytes(memory: ftyp + moov + Plant.be32(0x7FFF_FFF0) + Array("mdat".utf8))
        let facts = try #require(try MP4Facts.read(file, from: 0, to: file.size))
        #expect(facts.end == ftyp.count + moov.count)
        #expect(facts.hasAudio && facts.hasLocation)
        // Without the shallow `loci` the only location lies past the depth limit: not read, not claimed.
        let deepOnly = box(Array("moov".utf8), nested)
        let deep = try #require(
            try MP4Facts.read(HEIFFileBytes(memory: ftyp + deepOnly), from: 0, to: ftyp.count + deepOnly.count))
        #expect(!deep.hasAudio && !deep.hasLocation)
        // No `ftyp` first, or no `moov`: no MP4.
        #expect(try MP4Facts.read(HEIFFileBytes(memory: moov), from: 0, to: moov.count) == nil)
        #expect(try MP4Facts.read(HEIFFileBytes(memory: ftyp), from: 0, to: ftyp.count) == nil)
        // A Samsung directory whose records point anywhere: ignored, never read out of bounds.
        let bogus =
            Array("SEFH".utf8) + Plant.le32(107) + Plant.le32(2) + [0, 0, 0x30, 0x0A] + Plant.le32(-1)
            + Plant.le32(0x7FFF_FFFF) + [0, 0, 0x30, 0x0A] + Plant.le32(1 << 30) + Plant.le32(16)
        let trailer = [UInt8](repeating: 0x41, count: 64) + bogus + Plant.le32(bogus.count) + Array("SEFT".utf8)
        let read = try #require(try SamsungTrailer.read(HEIFFileBytes(memory: trailer)))
        #expect(read.motionPhotoData == nil)
    }

    /// The HEIF layouts, made here from the still (heif-enc, avifenc): a top-level `mpvd` box holding the MP4
    /// (Samsung's HEIC; Motion Photo 1.0 in HEIC and AVIF), and an MP4 appended after an AVIF's boxes (libavif
    /// reads such a file; libheif refuses a HEIC with a second `ftyp`). Found, reported, never written.
    @Test(arguments: ["heic mpvd", "avif mpvd", "avif appended"])
    func heifLayoutsAreFoundAndNeverWritten(_ layout: String) throws {
        let made = try Self.fixtures()
        try Witness.require("heif-enc", "avifenc")
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(made.still, to: directory + "/still.jpg")
        let avif = layout.hasPrefix("avif")
        let encoded = directory + (avif ? "/still.avif" : "/still.heic")
        let run =
            avif
            ? try Tool.run("avifenc", ["-s", "10", directory + "/still.jpg", encoded])
            : try Tool.run("heif-enc", ["-q", "50", "-o", encoded, directory + "/still.jpg"])
        #expect(run.status == 0, "\(run.stderr)")
        let image = try Fixtures.bytes(encoded)
        let input =
            layout.hasSuffix("mpvd")
            ? image + Plant.box("mpvd", made.clip) : image + made.clip
        let video = try #require(try SharePipe.inspect(.bytes(input)).embeddedVideo, "\(layout)")
        #expect(video.container == (layout.hasSuffix("mpvd") ? .heifVideoBox : .unannounced), "\(layout)")
        #expect(video.readable && video.hasAudio && video.hasLocation && video.byteCount == made.clip.count)
        #expect(try SharePipe.inspect(.bytes(image)).embeddedVideo == nil, "\(layout): found in the bare image")
        for mode in [StripMode.all, .gps, .none] {
            let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: mode))
            Self.expectNoVideo(result.bytes, "\(layout), strip \(mode)")
            #expect(result.removedMetadata.contains(.embeddedVideo), "\(layout), strip \(mode)")
        }
    }

    /// The corpus's Samsung Galaxy HEIC (One UI 6): its `mpvd` box holds an MP4 with sound and a `©xyz`
    /// location; it is found, reported, and never written, whatever the strip mode (a HEIC is always
    /// re-encoded).
    @Test(
        .enabled(
            if: FileManager.default.fileExists(atPath: Fixtures.corpus("heic/samsung-one-ui-6.heic")),
            "needs ../shared/corpus/heic/samsung-one-ui-6.heic"))
    func samsungHEICsVideoBoxIsReportedAndNeverWritten() throws {
        let source = ImageSource.file(path: Fixtures.corpus("heic/samsung-one-ui-6.heic"))
        let video = try #require(try SharePipe.inspect(source).embeddedVideo)
        #expect(video.container == .heifVideoBox && video.readable && video.hasAudio && video.hasLocation, "\(video)")
        #expect(video.byteCount > 1_000_000)
        for mode in [StripMode.all, .none] {
            var options = PrepareOptions(strip: mode)
            options.maxShortEdge = 300
            let result = try SharePipe.prepare(source, options: options)
            #expect(result.removedMetadata.contains(.embeddedVideo), "strip \(mode): \(result.removedMetadata)")
            #expect(result.embeddedVideo == video)
            for needle in ["ftypmp42", "moov", "SoundHandle", "mpvd"] {
                #expect(!LeakScanner.contains(result.bytes, Array(needle.utf8)), "strip \(mode): \(needle)")
            }
            #expect(
                (mode == .none) == result.adjustments.contains { $0.hasPrefix("embedded video removed") },
                "strip \(mode): \(result.adjustments)")
        }
    }

    /// The CLI: a motion photo's line names the video with its sound and location (text and JSON), and a Live
    /// Photo's video beside a prepared photo is named as not prepared.
    @Test func theCLINamesTheVideoAndTheLivePhotosClip() throws {
        let made = try Self.fixtures()
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let input = directory + "/in"
        try FileManager.default.createDirectory(atPath: input, withIntermediateDirectories: true)
        try Fixtures.write(made.still, to: input + "/IMG_0001.jpg")
        try Fixtures.write(made.clip, to: input + "/IMG_0001.MOV")
        try Fixtures.write(
            Self.motionPhoto(.googleContainer, still: made.still, video: made.clip), to: input + "/PXL_MP.jpg")
        try Fixtures.write(made.clip, to: input + "/unrelated.mp4")

        let text = try Tool.run(Tool.sharepipe, ["prepare", input, "--out", directory + "/t", "--strip", "all"])
        #expect(text.status == 0, "\(text.stderr)")
        let line = try #require(text.stdout.split(separator: "\n").first { $0.contains("PXL_MP.jpg") })
        #expect(
            line.contains("removed: ") && line.contains("embedded video (motion photo, ")
                && line.contains("with audio, with location tags)"), "\(line)")
        #expect(
            text.stderr.contains(
                "note: video beside IMG_0001.jpg not prepared: it can carry the location ("
                    + input + "/IMG_0001.MOV)"), "\(text.stderr)")
        #expect(!text.stderr.contains("unrelated.mp4"), "\(text.stderr)")
        Self.expectNoVideo(try Fixtures.bytes(directory + "/t/in/PXL_MP.jpg"), "CLI output")

        let json = try Tool.run(
            Tool.sharepipe, ["prepare", input, "--out", directory + "/j", "--strip", "gps", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let objects = json.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let photo = try #require(objects.first { ($0["input"] as? String)?.hasSuffix("PXL_MP.jpg") == true })
        #expect((photo["removedMetadata"] as? [String])?.contains("embeddedVideo") == true, "\(photo)")
        let video = try #require(photo["embeddedVideo"] as? [String: Any], "\(photo)")
        #expect(video["container"] as? String == "motionPhoto")
        #expect(video["hasAudio"] as? Bool == true && video["hasLocation"] as? Bool == true)
        #expect(video["kept"] as? Bool == false && video["bytes"] as? Int == made.clip.count)
        let clip = try #require(objects.first { $0["status"] as? String == "notPrepared" }, "\(json.stdout)")
        #expect(clip["input"] as? String == input + "/IMG_0001.MOV")
        #expect(clip["besidePhoto"] as? String == input + "/IMG_0001.jpg")
        #expect(clip["reason"] as? String == "video beside IMG_0001.jpg not prepared: it can carry the location")
        #expect(objects.filter { $0["status"] as? String == "notPrepared" }.count == 1)

        // The photo named on its own, and in a --files-from list: the video beside it is named too.
        let note = "note: video beside IMG_0001.jpg not prepared: it can carry the location"
        let named = try Tool.run(Tool.sharepipe, ["prepare", input + "/IMG_0001.jpg", "--out", directory + "/n"])
        #expect(named.status == 0 && named.stderr.contains(note), "\(named.stderr)")
        let list = directory + "/list.txt"
        try Fixtures.write(Array((input + "/IMG_0001.jpg\n").utf8), to: list)
        let listed = try Tool.run(Tool.sharepipe, ["prepare", "--files-from", list, "--out", directory + "/l"])
        #expect(listed.status == 0 && listed.stderr.contains(note), "\(listed.stderr)")
        // `inspect` names it too (text and JSON; no `kept`, as it writes nothing).
        let inspected = try Tool.run(Tool.sharepipe, ["inspect", "--json", input + "/PXL_MP.jpg"])
        let facts = try #require(
            (try? JSONSerialization.jsonObject(with: Data(inspected.stdout.utf8)) as? [String: Any])?["embeddedVideo"]
                as? [String: Any], "\(inspected.stdout)")
        #expect(facts["container"] as? String == "motionPhoto" && facts["hasLocation"] as? Bool == true)
        #expect(facts["kept"] == nil)
        let inspectedText = try Tool.run(Tool.sharepipe, ["inspect", input + "/PXL_MP.jpg"])
        #expect(inspectedText.stdout.contains("embedded video: motion photo, "), "\(inspectedText.stdout)")
        // A photo without a video beside it: no note.
        let alone = try Tool.run(Tool.sharepipe, ["prepare", input + "/PXL_MP.jpg", "--out", directory + "/a"])
        #expect(alone.status == 0 && !alone.stderr.contains("not prepared"), "\(alone.stderr)")
    }
}
