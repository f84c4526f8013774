import Glibc
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

    @Test func theLaddersSearchStopsNearTheLowestInFewMeasures() {
        // Scores linear in ln(101 − quality) (as libjpeg's are on photos) with a ripple, slopes 9 to 18 points, the
        // lowest meeting quality anywhere from 70 to 95: with the ladder's bracket of 2 and its window the search
        // writes that quality, the one above it or one scoring within the window, in at most its 4 measures, under
        // 2.6 on average.
        var measures = 0, cases = 0, over = 0
        for slope in [9.0, 11, 13, 15, 18] {
            for answer in 70...95 {
                for phase in [0.0, 1, 2] {
                    let offset = 80 + slope * log(Double(101 - answer)) - 0.1 * phase
                    let curve = { (quality: Int) in
                        offset - slope * log(Double(101 - quality)) + 0.15 * sin(Double(quality) * 1.7 + phase)
                    }
                    let lowest = (30...100).first { curve($0) >= 80 }!
                    var count = 0
                    let meeting = QualitySearch.lowestMeeting(
                        80, range: 30...100, guess: QualityLadder.autoGuess(target: 80, sourceQuality: nil),
                        maxMeasures: QualityLadder.autoMeasures, closeEnough: QualityLadder.autoCloseEnough,
                        bracket: QualityLadder.autoBracket
                    ) {
                        count += 1
                        return curve($0)
                    }
                    #expect(meeting.meets && meeting.score == curve(meeting.quality))
                    #expect(
                        (lowest...lowest + 1).contains(meeting.quality)
                            || meeting.score < 80 + QualityLadder.autoCloseEnough,
                        "slope \(slope) answer \(answer): q\(meeting.quality) scores \(meeting.score)")
                    #expect(count <= QualityLadder.autoMeasures)
                    measures += count
                    cases += 1
                    over += meeting.quality - lowest
                }
            }
        }
        #expect(Double(measures) / Double(cases) < 2.6, "\(measures) measures for \(cases) searches")
        // About a step over the lowest on average: the window is in points, and on the flattest curves (0.5 points
        // a step) it spans three steps.
        #expect(over * 10 < cases * 11, "\(over) steps over in \(cases) searches")
    }

    @Test func aSpentBudgetTakesTheFirstHitAndAMissStillGoesOnToOne() {
        // 80 at q88, 1.2 points a step. From q91 (83.6, over the window) the search steps down; with two probes'
        // worth already spent (0.47 of a candidate), the budget of 1.4 is gone after that one measure, so q91 is
        // written. Without the probes it steps down as before. From q85 (a miss) it goes on to a hit whatever it
        // has spent, then stops there.
        let curve = { (quality: Int) in 80 + 1.2 * Double(quality - 88) }
        func search(guess: Int, spent: Double) -> (QualitySearch.Meeting, [Int]) {
            var asked: [Int] = []
            let meeting = QualitySearch.lowestMeeting(
                80, range: 30...100, guess: guess, maxMeasures: QualityLadder.autoMeasures,
                closeEnough: QualityLadder.autoCloseEnough, bracket: QualityLadder.autoBracket,
                budget: QualityLadder.autoBudget, spent: spent
            ) {
                asked.append($0)
                return curve($0)
            }
            return (meeting, asked)
        }
        let spent = search(guess: 91, spent: 2 * 0.237)
        #expect(spent.0 == QualitySearch.Meeting(quality: 91, score: curve(91), meets: true) && spent.1 == [91])
        let fresh = search(guess: 91, spent: 0.237)
        #expect(fresh.1.count > 1 && fresh.0.quality < 91 && fresh.0.meets)
        let missed = search(guess: 85, spent: 2 * 0.237)
        #expect(missed.1.first == 85 && missed.1.count == 2 && missed.0.meets && missed.0.quality > 85)
    }

    @Test func theSearchKeepsToTheRangeItIsGiven() {
        // 80 at q80, rising 0.8 a step. A ceiling under it (the byte-limit fallback's, or a low maximum): the ceiling,
        // short of the target. A floor over it (--min-quality 88): the floor, measured once.
        let curve = { (quality: Int) in 80 + 0.8 * Double(quality - 80) }
        var asked: [Int] = []
        let capped = QualitySearch.lowestMeeting(80, range: 40...75, guess: 83, maxMeasures: 4, bracket: 2) {
            asked.append($0)
            return curve($0)
        }
        #expect(capped == QualitySearch.Meeting(quality: 75, score: curve(75), meets: false))
        #expect(asked.allSatisfy { (40...75).contains($0) })
        asked = []
        let floored = QualitySearch.lowestMeeting(80, range: 88...100, guess: 83, maxMeasures: 4, bracket: 2) {
            asked.append($0)
            return curve($0)
        }
        #expect(floored == QualitySearch.Meeting(quality: 88, score: curve(88), meets: true) && asked == [88])
    }

    @Test func theFirstGuessFollowsTheTargetAndALowQualitySource() {
        // q83 meets 80 on the median photo; a higher target guesses higher along the assumed slope.
        #expect(QualityLadder.autoGuess(target: 80, sourceQuality: nil) == 83)
        #expect(QualityLadder.autoGuess(target: 90, sourceQuality: nil) == 93)
        #expect(QualityLadder.autoGuess(target: 70, sourceQuality: nil) == 62)
        // A source saved well under q75 guesses a step or two lower; a good one changes nothing.
        #expect(QualityLadder.autoGuess(target: 80, sourceQuality: 95) == 83)
        #expect(QualityLadder.autoGuess(target: 80, sourceQuality: 73) == 83)
        #expect(QualityLadder.autoGuess(target: 80, sourceQuality: 60) == 81)
        #expect(QualityLadder.autoGuess(target: 80, sourceQuality: 30) == 77)
    }

    @Test func theProbeIsEveryFourthBandOfRowsFromTheThird() throws {
        // Each row's pixels say which row they are.
        let size = PixelSize(width: 300, height: 1100)
        var pixels = [UInt8](repeating: 0, count: size.area * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let at = (y * size.width + x) * 3
                pixels[at] = UInt8(y & 0xFF)
                pixels[at + 1] = UInt8(y >> 8)
                pixels[at + 2] = UInt8(x & 0xFF)
            }
        }
        let bitmap = Bitmap(size: size, layout: .rgb, pixels: pixels)
        let probe = try #require(QualityLadder.probe(of: bitmap))
        // Rows 128–191, 384–447, 640–703, 896–959: a bit under a quarter, on 16-row block boundaries.
        #expect(probe.size == PixelSize(width: 300, height: 256) && probe.layout == .rgb)
        for row in 0..<probe.height {
            let source = 128 + (row / 64) * 256 + row % 64
            #expect(probe.pixel(x: 7, y: row) == bitmap.pixel(x: 7, y: source), "row \(row)")
        }
        #expect(QualityLadder.probeBytes(size) == 300 * 256 * 3)
        // Too few rows for six scales, or too narrow: no probe.
        #expect(QualityLadder.probe(of: Bitmap(size: PixelSize(width: 300, height: 900), layout: .rgb)) == nil)
        #expect(QualityLadder.probe(of: Bitmap(size: PixelSize(width: 200, height: 1100), layout: .gray)) == nil)
        #expect(QualityLadder.probeRows(1440) == 320 && QualityLadder.probeRows(100) == 0)
    }

    @Test func theGuessAfterTheProbeFollowsItsScore() {
        // A probe scoring the target plus its bias plus the aim's steps keeps the quality it was encoded at; more
        // moves the guess down, less up, along the assumed slope (or the one given).
        let aimSteps =
            QualityLadder.probeAimSteps * QualitySearch.stepGain(at: 83, logSlope: QualitySearch.assumedLogSlope)
        let onTarget = 80 + QualityLadder.probeBias + aimSteps
        #expect(QualityLadder.guessAfterProbe(onTarget, at: 83, target: 80) == 83)
        let guesses = stride(from: 70.0, through: 90.0, by: 0.5).map {
            QualityLadder.guessAfterProbe($0, at: 83, target: 80)
        }
        #expect(zip(guesses, guesses.dropFirst()).allSatisfy { $0 >= $1 })
        #expect(guesses.first! > 90 && guesses.last! < 75)
        #expect(QualityLadder.guessAfterProbe(-50, at: 83, target: 80) == 100)
        // A steeper slope moves less for the same shortfall.
        #expect(
            QualityLadder.guessAfterProbe(74, at: 83, target: 80, logSlope: 26)
                < QualityLadder.guessAfterProbe(74, at: 83, target: 80))
        // Two probes' slope, kept within 6 to 30.
        let slope = QualityLadder.probeSlope((83, 71.0), (93, 71.0 + 13 * (log(18.0) - log(8.0))))
        #expect(abs(slope - 13) < 1e-9)
        #expect(QualityLadder.probeSlope((83, 80), (90, 79)) == 6 && QualityLadder.probeSlope((83, 70), (84, 90)) == 30)
    }

    @Test func aLargeRenderIsProbedFirstAndStillMeetsTheTarget() throws {
        // 1100 rows: the probe (256 rows) is encoded and scored first (twice where the first is far from the
        // target); its attempts are listed apart from the whole candidates, and the output scores the target
        // against the picture.
        let (png, bitmap) = try Self.scenePNG(PixelSize(width: 320, height: 1100), seed: 3)
        var options = PrepareOptions()
        options.acceptedFormats = [.jpeg]
        options.qualitySetting = .auto(target: 80)
        let prepared = try SharePipe.prepare(.bytes(png), options: options)
        let probes = prepared.attempts.filter { $0.note == QualityLadder.probeNote }
        #expect((1...2).contains(probes.count) && probes.allSatisfy { $0.size == PixelSize(width: 320, height: 256) })
        #expect(probes.first?.score != nil && prepared.attempts.first?.note == QualityLadder.probeNote)
        let whole = prepared.attempts.filter { $0.note != QualityLadder.probeNote }
        #expect(!whole.isEmpty && whole.allSatisfy { $0.size == bitmap.size && $0.score != nil })
        let score = try #require(prepared.score)
        #expect(score >= 80 && prepared.size == bitmap.size)
        #expect(abs(try SSIMULACRA2.score(try Decode.bitmap(prepared.bytes), against: bitmap) - score) < 0.01)
    }

    @Test func aJPEGSourcesOwnQualityReachesTheAutoSearchOnly() throws {
        let (png, bitmap) = try Self.scenePNG(PixelSize(width: 480, height: 320), seed: 1)
        let jpeg = try JPEGEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 58, progressive: false), metadata: [])
        // Downscaled (the same size would be a metadata-only copy).
        var auto = PrepareOptions()
        auto.acceptedFormats = [.jpeg]
        auto.maxShortEdge = 240
        auto.qualitySetting = .auto(target: 80)
        #expect(try Pipeline.plan(.bytes(jpeg), options: auto.checked()).plan.sourceQualityForGuess == 58)
        // Not read for a PNG, nor for a fixed quality (which reads it as its cap).
        #expect(try Pipeline.plan(.bytes(png), options: auto.checked()).plan.sourceQualityForGuess == nil)
        var fixed = auto
        fixed.qualitySetting = .fixed(85)
        let capped = try Pipeline.plan(.bytes(jpeg), options: fixed.checked()).plan
        #expect(capped.sourceQualityForGuess == nil)
        #expect(
            capped.ladder
                == .quality(
                    range: 40...58, sourceQualityCap: SourceQuality(sameScale: 58), minShortEdge: fixed.minShortEdge))
        // The auto job from it meets the target as from any source.
        let prepared = try SharePipe.prepare(.bytes(jpeg), options: auto)
        #expect(try #require(prepared.score) >= 80)
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
                #expect(
                    try JPEGEncoder.ssimulacra2(lower, against: bitmap) < 80 + QualityLadder.autoCloseEnough,
                    "seed \(seed) q\(quality - 1)")
            }
            // Every scored attempt carries its score; the written one is among them.
            #expect(prepared.attempts.contains { $0.quality == quality && $0.score == score })
        }
    }

    @Test func anAutoOutputIsProgressiveWhenThatIsSmaller() throws {
        // The chosen quality is written progressive (reported) when that file is smaller than the baseline one,
        // else baseline (a tiny picture: the scans' headers outweigh what they save); both are the scored
        // candidate recoded, each the optimized encode's file; the pixels are the same, so the reported
        // score holds either way.
        var written: Set<Bool> = []
        for (seed, size) in [(UInt64(1), PixelSize(width: 480, height: 320)), (2, PixelSize(width: 24, height: 16))] {
            let (png, bitmap) = try Self.scenePNG(size, seed: seed)
            var options = PrepareOptions()
            options.acceptedFormats = [.jpeg]
            options.qualitySetting = .auto(target: 80)
            let prepared = try SharePipe.prepare(.bytes(png), options: options)
            let quality = try #require(prepared.quality)
            let frame = try #require(JPEGByteCapTests.frame(prepared.bytes))
            var scoring = JPEGEncoder()
            scoring.optimizeCoding = false
            let candidate = try scoring.encode(
                bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
            let recoded = try JPEGEncoder().recode(candidate, alsoBaseline: true, metadata: [])
            let baseline = try JPEGEncoder().encode(
                bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
            let progressive = try JPEGEncoder().encode(
                bitmap, settings: EncodeSettings(quality: quality, progressive: true), metadata: [])
            #expect(recoded.progressive == progressive)
            // The baseline file is recoded where it could be the smaller, and is then the optimized encode's.
            if let recodedBaseline = recoded.baseline {
                #expect(recodedBaseline == baseline)
            } else {
                #expect(progressive.count < baseline.count)
            }
            let reported = prepared.adjustments.contains(QualityLadder.progressiveNote)
            #expect(frame.progressive == reported, "seed \(seed): \(prepared.adjustments)")
            #expect(frame.progressive == (progressive.count < baseline.count), "seed \(seed)")
            #expect(prepared.bytes.count == min(progressive.count, baseline.count), "seed \(seed)")
            let decoded = try Decode.bitmap(prepared.bytes)
            #expect(abs(try SSIMULACRA2.score(decoded, against: bitmap) - prepared.score!) < 0.01)
            written.insert(frame.progressive)
        }
        #expect(written == [true, false])
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

    @Test func aLimitTheWrittenFileMeetsDoesNotBiteThoughTheScoredCandidateIsLarger() throws {
        // Candidates are scored from encodes with standard Huffman tables, larger than the file written: the limit
        // is held against the written file, so a limit of exactly its size leaves the answer as it was, and a
        // byte less caps it below the target's quality.
        let (png, _) = try Self.scenePNG(PixelSize(width: 480, height: 320), seed: 1)
        var options = PrepareOptions()
        options.acceptedFormats = [.jpeg]
        options.qualitySetting = .auto(target: 80)
        let free = try SharePipe.prepare(.bytes(png), options: options)
        let scored = try #require(
            free.attempts.first { $0.note == QualityLadder.scoredNote && $0.quality == free.quality })
        #expect(scored.bytes > free.bytes.count)
        options.maxBytes = free.bytes.count
        let exact = try SharePipe.prepare(.bytes(png), options: options)
        #expect(exact.bytes == free.bytes && exact.quality == free.quality && exact.score == free.score)
        options.maxBytes = free.bytes.count - 1
        let capped = try SharePipe.prepare(.bytes(png), options: options)
        let cappedQuality = try #require(capped.quality)
        #expect(capped.bytes.count < free.bytes.count && cappedQuality < free.quality!)
    }

    @Test func aFixedQualityIsUnchangedAndUnscored() throws {
        let (png, _) = try Self.scenePNG(PixelSize(width: 240, height: 160), seed: 1)
        var options = PrepareOptions()
        options.acceptedFormats = [.jpeg]
        let prepared = try SharePipe.prepare(.bytes(png), options: options)
        #expect(prepared.quality == 85 && prepared.score == nil)
        #expect(prepared.attempts.allSatisfy { $0.score == nil })
    }

    /// `bitmap` (RGB or RGBA) as RGB over the grey `background` (opaque: its colour samples).
    static func composited(_ bitmap: Bitmap, over background: Int) -> Bitmap {
        let channels = bitmap.layout.channels
        var out = [UInt8](repeating: 0, count: bitmap.size.area * 3)
        for i in 0..<bitmap.size.area {
            let alpha = channels == 4 ? Int(bitmap.pixels[i * 4 + 3]) : 255
            for c in 0..<3 {
                out[i * 3 + c] = UInt8(
                    (Int(bitmap.pixels[i * channels + c]) * alpha + background * (255 - alpha) + 127) / 255)
            }
        }
        return Bitmap(size: bitmap.size, layout: .rgb, pixels: out)
    }

    @Test(.tags(.witness), .skipped(whenListed: "witness")) func aWebPOutputIsSearchedAndScoredAsAJPEGIs() throws {
        try Witness.require("dwebp")
        for (seed, alpha) in [(UInt64(1), false), (2, false), (3, true)] {
            var (png, bitmap) = try Self.scenePNG(PixelSize(width: 480, height: 320), seed: seed)
            if alpha {
                // A vignette of partial transparency over the scene, fully transparent in one corner.
                var pixels = [UInt8](repeating: 0, count: bitmap.size.area * 4)
                for y in 0..<bitmap.height {
                    for x in 0..<bitmap.width {
                        let i = y * bitmap.width + x
                        for c in 0..<3 { pixels[i * 4 + c] = bitmap.pixels[i * 3 + c] }
                        pixels[i * 4 + 3] = x < 40 && y < 40 ? 0 : UInt8(120 + 135 * x / bitmap.width)
                    }
                }
                bitmap = Bitmap(size: bitmap.size, layout: .rgba, pixels: pixels)
                png = try PNGEncoder().encode(
                    bitmap, settings: EncodeSettings(quality: 0, progressive: false), metadata: [])
            }
            var options = PrepareOptions()
            options.acceptedFormats = [.webp]
            options.qualitySetting = .auto(target: 80)
            let prepared = try SharePipe.prepare(.bytes(png), options: options)
            #expect(prepared.format == .webp && prepared.size == bitmap.size)
            let quality = try #require(prepared.quality)
            let score = try #require(prepared.score)
            // The report's score is the output's as libwebp's own dwebp decodes it, against the picture (with alpha:
            // the lower over a dark and a light grey).
            let decoded = try WebPFixtures.witnessDecode(prepared.bytes)
            #expect((decoded.pixels.enumerated().filter { $0.offset % 4 == 3 }.contains { $0.element < 255 }) == alpha)
            let rescored = try [26, 230].map { background in
                try SSIMULACRA2.score(
                    Self.composited(decoded, over: background), against: Self.composited(bitmap, over: background))
            }
            let witnessed = alpha ? rescored.min()! : rescored[0]
            #expect(abs(witnessed - score) < 0.01, "seed \(seed): reported \(score), rescored \(rescored)")
            if seed == 2 {
                // Saturated colour lines a pixel wide: VP8's 4:2:0 chroma loses them at any quality (about -60,
                // the PyPI package agrees), so the ceiling is written and the report says it falls short.
                #expect(quality == 100 && score < 80, "q\(quality) scores \(score)")
                #expect(prepared.adjustments.contains("quality at its ceiling short of SSIMULACRA2 80"))
                continue
            }
            #expect(score >= 80, "seed \(seed): q\(quality) scores \(score)")
            // One step lower misses (or is within the search's tolerance of the target).
            let lower = try WebPEncoder().encode(
                bitmap, settings: EncodeSettings(quality: quality - 1, progressive: false), metadata: [])
            #expect(
                try WebPEncoder.ssimulacra2(lower, against: bitmap) < 80 + QualityLadder.autoCloseEnough,
                "seed \(seed) q\(quality - 1)")
            #expect(prepared.attempts.contains { $0.quality == quality && $0.score == score })
            #expect(prepared.attempts.allSatisfy { $0.score != nil && $0.format == .webp })

            // Under a byte limit the search's pick no longer fits: the best quality that does, scored.
            options.maxBytes = prepared.bytes.count * 2 / 3
            let capped = try SharePipe.prepare(.bytes(png), options: options)
            #expect(capped.format == .webp && capped.bytes.count <= options.maxBytes!)
            let cappedScore = try #require(capped.score)
            let cappedQuality = try #require(capped.quality)
            #expect(cappedScore < score && cappedQuality < quality, "q\(cappedQuality) scores \(cappedScore)")
        }
        // A fixed quality stays as asked and unscored.
        let (png, _) = try Self.scenePNG(PixelSize(width: 240, height: 160), seed: 1)
        var options = PrepareOptions()
        options.acceptedFormats = [.webp]
        let fixed = try SharePipe.prepare(.bytes(png), options: options)
        #expect(fixed.format == .webp && fixed.quality == 85 && fixed.score == nil)
    }
}
