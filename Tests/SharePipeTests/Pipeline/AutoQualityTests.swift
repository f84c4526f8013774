import Testing

@testable import SharePipe

/// `--quality auto` (`QualitySetting.auto`): the value on every surface, the search's arithmetic, and jobs whose
/// outputs are scored again here from their bytes.
struct AutoQualityTests {
    /// A PNG of `JPEGByteCapTests.scene`: the job's render is its pixels as they are (no resampling below the
    /// short-edge cap), so an output's score can be checked against the input's own pixels.
    static func scenePNG(_ size: PixelSize, seed: UInt64) throws -> (png: [UInt8], bitmap: Bitmap) {
        let bitmap = JPEGByteCapTests.scene(size, saturatedEdges: seed % 2 == 0, seed: seed)
        let png = try PNGEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 0, progressive: false), metadata: [])
        return (png, bitmap)
    }

    @Test func theTextFormsReadAndPrintBack() {
        #expect(QualitySetting(text: "85") == .fixed(85))
        #expect(QualitySetting(text: "auto") == .auto(target: QualitySetting.defaultTarget))
        #expect(QualitySetting(text: "auto:85") == .auto(target: 85))
        #expect(QualitySetting(text: "auto:82.5") == .auto(target: 82.5))
        for bad in ["", "Auto", "auto:", "auto:x", "auto:nan", "auto 80", "85.5", "high"] {
            #expect(QualitySetting(text: bad) == nil, "\(bad)")
        }
        #expect(QualitySetting.auto(target: 80).description == "auto:80")
        #expect(QualitySetting.auto(target: 82.5).description == "auto:82.5")
        #expect(QualitySetting.fixed(70).description == "70")
    }

    @Test func everySurfaceTakesAuto() throws {
        let query = try PrepareOptions().applying(textValues: [("quality", "auto:85")])
        #expect(query.qualitySetting == .auto(target: 85) && query.qualityTarget == 85)
        #expect(query.quality == 85 && query.qualityCeiling == 100)
        let fixed = try query.applying(textValues: [("quality", "70")])
        #expect(fixed.qualitySetting == .fixed(70) && fixed.qualityTarget == nil)
        // A target out of 30...99 is refused, naming the option.
        for text in ["auto:100", "auto:12"] {
            #expect(throws: SharePipeError.self) { try PrepareOptions().applying(textValues: [("quality", text)]) }
        }
        // min_quality may go up to 100 under auto (the search's ceiling).
        #expect(throws: Never.self) {
            try PrepareOptions().applying(textValues: [("quality", "auto"), ("min_quality", "90")])
        }
        let json = #"{"profiles":[{"name":"newsite","maxStillBytes":2000000,"maxQuality":"auto:84"}]}"#
        let catalog = try ProfileCatalog.builtIn.applying(json: Array(json.utf8), file: "p.json")
        let options = try #require(catalog.named("newsite")).options()
        #expect(options.qualitySetting == .auto(target: 84))
        let badJSON = #"{"profiles":[{"name":"newsite","maxStillBytes":2000000,"maxQuality":"best"}]}"#
        #expect(throws: ProfileFileError.self) {
            try ProfileCatalog.builtIn.applying(json: Array(badJSON.utf8), file: "p.json")
        }
    }

    @Test func theSearchFindsTheLowestQualityMeetingTheTargetInFewMeasures() {
        // Monotone score curves of several slopes and offsets: the answer is the lowest quality at or over the
        // target (or the ceiling), found in at most 6 measures.
        for (slope, offset) in [(0.5, 40.0), (0.3, 58.0), (1.2, -20.0), (0.6, 35.5), (0.05, 75.0), (2.0, 0)] {
            for target in [70.0, 80.0, 90.0] {
                let curve = { (quality: Int) in offset + slope * Double(quality) }
                var measures = 0
                let meeting = QualitySearch.lowestMeeting(target, range: 40...100, guess: 82, closeEnough: 0) {
                    measures += 1
                    return curve($0)
                }
                let lowest = (40...100).first { curve($0) >= target }
                #expect(meeting.quality == (lowest ?? 100), "slope \(slope) offset \(offset) target \(target)")
                #expect(meeting.meets == (lowest != nil))
                #expect(meeting.score == curve(meeting.quality))
                #expect(measures <= 6 + (lowest == nil ? 1 : 0), "slope \(slope) offset \(offset): \(measures)")
            }
        }
    }

    @Test func anAutoOutputScoresTheTargetAndALowerQualityWouldNot() throws {
        for seed: UInt64 in [1, 2] {
            let (png, bitmap) = try Self.scenePNG(PixelSize(width: 480, height: 320), seed: seed)
            var options = PrepareOptions()
            options.acceptedFormats = [.jpeg]
            options.qualitySetting = .auto(target: 80)
            let prepared = try SharePipe.prepare(.bytes(png), options: options)
            let quality = try #require(prepared.quality)
            let score = try #require(prepared.score)
            #expect(prepared.format == .jpeg && prepared.size == bitmap.size)
            // The report's score is the output's, decoded here, against the picture.
            let decoded = try Decode.bitmap(prepared.bytes)
            #expect(abs(try SSIMULACRA2.score(decoded, against: bitmap) - score) < 0.01)
            if prepared.adjustments.contains(where: { $0.contains("short of") }) {
                #expect(quality == 100 && score < 80)
            } else {
                #expect(score >= 80, "seed \(seed): q\(quality) scores \(score)")
                // One step lower misses (or is within the search's tolerance of the target).
                let lower = try JPEGEncoder().encode(
                    bitmap, settings: EncodeSettings(quality: quality - 1, progressive: false), metadata: [])
                #expect(try JPEGEncoder.ssimulacra2(lower, against: bitmap) < 80.4, "seed \(seed) q\(quality - 1)")
            }
            // Every scored attempt carries its score; the written one is among them.
            #expect(prepared.attempts.contains { $0.quality == quality && $0.score == score })
        }
    }

    @Test func theByteLimitStaysAHardCapAndTheFitIsScored() throws {
        // Stones (detail in luma): 4:2:0 reaches the target.
        let (png, bitmap) = try Self.scenePNG(PixelSize(width: 480, height: 320), seed: 1)
        var options = PrepareOptions()
        options.acceptedFormats = [.jpeg]
        options.qualitySetting = .auto(target: 88)
        let free = try SharePipe.prepare(.bytes(png), options: options)
        options.maxBytes = free.bytes.count * 2 / 3
        let capped = try SharePipe.prepare(.bytes(png), options: options)
        #expect(capped.bytes.count <= options.maxBytes!)
        let score = try #require(capped.score)
        #expect(try #require(free.score) >= 88 && score < free.score!)
        // The reported score is that of the written pixels (its baseline twin) against the render.
        if capped.size == bitmap.size {
            #expect(abs(try SSIMULACRA2.score(try Decode.bitmap(capped.bytes), against: bitmap) - score) < 0.01)
        }
    }

    @Test func aFixedQualityIsUnchangedAndUnscored() throws {
        let (png, _) = try Self.scenePNG(PixelSize(width: 240, height: 160), seed: 1)
        var options = PrepareOptions()
        options.acceptedFormats = [.jpeg]
        let prepared = try SharePipe.prepare(.bytes(png), options: options)
        #expect(prepared.quality == 85 && prepared.score == nil)
        #expect(prepared.attempts.allSatisfy { $0.score == nil })
    }
}
