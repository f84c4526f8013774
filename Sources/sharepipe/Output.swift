import SharePipe
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import Dispatch

func printError(_ text: String) {
    writeStandardError(text + "\n")
}

/// Writes straight to file descriptor 2 (unbuffered, and safe to call from any thread).
func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

enum JSONText {
    static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The `--json` and `--report` shape of one prepared file (stable: fields are only ever added).
struct FileJSON: Encodable {
    var version = SharePipeVersion.current
    var input: String
    var service: String?
    var output: String?
    var status: String  // "ok", "failed", "skipped", "planned" (--dry-run)
    var format: String?
    var inputWidth: Int?
    var inputHeight: Int?
    var width: Int?
    var height: Int?
    var inputBytes: Int?
    var bytes: Int?
    var quality: Int?
    /// SSIMULACRA2 of the output against the picture before encoding, where the quality search measured it.
    var score: Double?
    var method: String?
    var attempts: [FitAttempt]?
    var removedMetadata: [String]?
    /// The video a motion photo carried (`removedMetadata` lists `embeddedVideo` unless it was kept).
    var embeddedVideo: EmbeddedVideoJSON?
    var orientationApplied: Int?
    var peakPixelBytes: Int?
    var warnings: [String]?
    var adjustments: [String]?
    /// BlurHash and ThumbHash of the output as displayed (`PreparedImage.placeholder`).
    var placeholder: Placeholder?
    /// The variants written beside the output (`--variant`), each with its own file and report.
    var variants: [VariantJSON]?
    /// Where the subject is in the output, Mastodon's focal point: x −1 (left) … 1 (right), y −1 (bottom) … 1
    /// (top) (`PreparedImage.focus`).
    var focus: FocalPoint?
    var error: String?
    var errorKind: String?
    /// For `tooLarge`: which limit, the value found and the limit's number.
    var errorLimit: ExceededLimit?
    /// For `corrupt`: `header` (the file's structure) or `decode` (its compressed image data).
    var errorPhase: SharePipeError.ReadPhase?
    /// For `unsupportedFormat`: `format` (not an image SharePipe reads), `feature` (a feature of the format
    /// its library lacks), `library` (the format's library is not installed here) or `disabled` (its family is
    /// turned off: `--disable`).
    var errorUnsupported: SharePipeError.MissingSupport?

    init(_ report: BatchReport) {
        input = report.input
        service = report.service
        output = report.output
        inputBytes = report.inputBytes
        status = report.error != nil ? "failed" : report.skipped ? "skipped" : report.planned ? "planned" : "ok"
        if let result = report.result {
            format = result.format.rawValue
            inputWidth = result.inputSize.width
            inputHeight = result.inputSize.height
            width = result.size.width
            height = result.size.height
            bytes = report.bytes
            quality = result.quality
            score = result.score.map { ($0 * 100).rounded() / 100 }
            method = result.method.rawValue
            attempts = result.attempts
            removedMetadata = result.removedMetadata.sorted().map(\.rawValue)
            embeddedVideo = result.embeddedVideo.map {
                EmbeddedVideoJSON($0, kept: result.keptMetadata.contains(.embeddedVideo))
            }
            orientationApplied = result.appliedOrientation.rawValue
            peakPixelBytes = result.peakPixelBytes
            warnings = result.warnings
            adjustments = result.adjustments
            placeholder = result.placeholder
            focus = result.focus
        }
        if !report.variantOutputs.isEmpty {
            variants = report.variantOutputs.map { written in
                VariantJSON(written, report.result?.variants.first { $0.name == written.name }?.image)
            }
        }
        if let error = report.error {
            self.error = error.description
            errorKind = error.kind
            switch error {
            case .tooLarge(_, let exceeded): errorLimit = exceeded
            case .corrupt(_, let phase, _): errorPhase = phase
            case .unsupportedFormat(_, let missing, _): errorUnsupported = missing
            default: break
            }
        }
    }
}

/// One variant file in `--json` and `--report` (`FileJSON.variants`): the same fields as its output's.
struct VariantJSON: Encodable {
    var name: String
    var output: String
    var format: String?
    var width: Int?
    var height: Int?
    var bytes: Int?
    var quality: Int?
    var method: String?
    var attempts: [FitAttempt]?
    var removedMetadata: [String]?
    var peakPixelBytes: Int?
    var warnings: [String]?
    var adjustments: [String]?

    init(_ written: BatchVariantOutput, _ image: PreparedImage?) {
        name = written.name
        output = written.output
        bytes = written.bytes
        if let image {
            format = image.format.rawValue
            width = image.size.width
            height = image.size.height
            quality = image.quality
            method = image.method.rawValue
            attempts = image.attempts
            removedMetadata = image.removedMetadata.sorted().map(\.rawValue)
            peakPixelBytes = image.peakPixelBytes
            warnings = image.warnings
            adjustments = image.adjustments
        }
    }
}

/// A video a batch passed over beside a photo it prepared, in `--json` and `--report`.
struct VideoNotPreparedJSON: Encodable {
    var version = SharePipeVersion.current
    var input: String
    var status = "notPrepared"
    var besidePhoto: String
    var reason: String

    init(_ pair: VideoBesidePhoto) {
        input = pair.video
        besidePhoto = pair.photo
        reason = pair.note
    }
}

/// A motion photo's video in `--json` and `--report`.
struct EmbeddedVideoJSON: Encodable {
    var container: String
    var bytes: Int
    var hasAudio: Bool
    var hasLocation: Bool
    /// false: announced, but its MP4 could not be read (it may carry sound and a location).
    var readable: Bool
    /// Whether the output holds it (absent for `inspect`, which writes no output).
    var kept: Bool?

    init(_ video: EmbeddedVideo, kept: Bool?) {
        container = video.container.rawValue
        bytes = video.byteCount
        hasAudio = video.hasAudio
        hasLocation = video.hasLocation
        readable = video.readable
        self.kept = kept
    }
}

struct InspectJSON: Encodable {
    var file: String
    var format: String
    var width: Int
    var height: Int
    var colorModel: String
    var bitDepth: Int
    var progressive: Bool
    var orientation: Int
    var storedOrientation: Int?
    var frames: Int
    var hasAlpha: Bool
    var metadata: [String]
    var embeddedVideo: EmbeddedVideoJSON?
    var bytes: Int

    init(file: String, info: ImageInfo) {
        self.file = file
        format = info.format.rawValue
        width = info.size.width
        height = info.size.height
        colorModel = info.colorModel.rawValue
        bitDepth = info.bitDepth
        progressive = info.progressive
        orientation = info.orientation.rawValue
        storedOrientation = info.storedOrientationValue
        frames = info.frameCount
        hasAlpha = info.hasAlpha
        metadata = info.metadataKinds.sorted().map(\.rawValue)
        embeddedVideo = info.embeddedVideo.map { EmbeddedVideoJSON($0, kept: nil) }
        bytes = info.byteCount
    }
}

enum InspectText {
    static func describe(file: String, info: ImageInfo) -> String {
        let kinds = info.metadataKinds.sorted().map(\.rawValue)
        return """
            \(file): \(info.format.rawValue.uppercased()) \(info.size) \(info.colorModel.rawValue) \(info.bitDepth)-bit\
            \(info.progressive ? (info.format == .jpeg ? " progressive" : " interlaced") : "")\
            \(info.frameCount > 1 ? ", \(info.frameCount) frames" : ""), orientation \(info.storedOrientationValue.map(String.init) ?? "none")\
             (\(info.orientation.rawValue)), metadata: \(kinds.isEmpty ? "none" : kinds.joined(separator: ", ")), \(info.byteCount) bytes\
            \(info.embeddedVideo.map { "; embedded video: \($0.summary)" } ?? "")
            """
    }
}

/// The batch's one writer: prints each file's line (text, or JSON with `--json`) as it is done, appends it
/// to the `--report` file, keeps a progress line on a terminal, and counts for the summary. It keeps
/// counts only, never the reports.
final class Reporter {
    let json: Bool
    /// Where per-file text lines go: standard output, or standard error when the image itself goes there.
    let toStandardError: Bool
    let report: AppendOnlyFile?
    let interactive = isatty(STDERR_FILENO) != 0
    private(set) var processed = 0, failed = 0, skipped = 0, planned = 0
    /// Failures of kind `internal` (SharePipe's bugs), also counted in `failed`.
    private(set) var internalFailures = 0
    private var bytesIn = 0, bytesOut = 0, done = 0

    init(json: Bool, report: AppendOnlyFile? = nil, toStandardError: Bool = false) {
        self.json = json
        self.report = report
        self.toStandardError = toStandardError
    }

    func fileDone(_ report: BatchReport) {
        // The job's code is not needed for its report (`ProcessAllocator.unmapCodeAtPhases`).
        ProcessAllocator.reportStarts()
        var report = report
        report.error = report.error.map { CLISandbox.explained($0, input: report.input) }
        done += 1
        if case .internalError? = report.error { internalFailures += 1 }
        if report.error != nil {
            failed += 1
        } else if report.skipped {
            skipped += 1
        } else if report.planned {
            planned += 1
        } else {
            processed += 1
            bytesIn += report.inputBytes ?? 0
            bytesOut += report.bytes ?? 0
        }
        if interactive { writeStandardError("\r\u{1B}[K") }
        let object = JSONText.encode(FileJSON(report))
        if let file = self.report {
            do { try file.append(object) } catch {
                // The report is how a batch is resumed: losing lines silently is not an option.
                SharePipe.removeTemporaryOutputs()
                printError(
                    "sharepipe: cannot append to --report \(file.path): \(error); stopped (outputs written so far are whole)"
                )
                exit(ExitStatus.nothingDoneOrFatal)
            }
        }
        if json {
            emit(object)
        } else if let error = report.error {
            let text = error.description.hasPrefix(report.input + ":") ? "\(error)" : "\(report.input): \(error)"
            printError("FAILED \(text)\(report.service.map { " (for \($0))" } ?? "")")
        } else if report.skipped {
            emit("skipped \(report.input) (output exists: \(report.output ?? ""))")
        } else if report.planned {
            emit("would write \(report.input) → \(report.output ?? "")\(report.service.map { " [\($0)]" } ?? "")")
            for variant in report.variantOutputs { emit("  and variant \(variant.name) → \(variant.output)") }
        } else if let result = report.result {
            emit(Reporter.describe(report, result))
            for (written, variant) in zip(report.variantOutputs, result.variants) {
                emit(Reporter.describe(written, variant.image))
            }
        }
        fflush(nil)
        if interactive { writeStandardError("[\(done) done]") }
    }

    /// A video passed over beside a prepared photo (a Live Photo pair): a note on standard error in text, a
    /// `notPrepared` object with `--json`, and a line in `--report`.
    func videoNotPrepared(_ pair: VideoBesidePhoto) {
        let object = JSONText.encode(VideoNotPreparedJSON(pair))
        if let file = report {
            do { try file.append(object) } catch {
                printError("sharepipe: cannot append to --report \(file.path): \(error)")
            }
        }
        if json {
            emit(object)
        } else {
            printError("note: \(pair.note) (\(pair.video))")
        }
        fflush(nil)
    }

    /// One line per output; every change the user did not ask for is listed after "adjusted:".
    static func describe(_ report: BatchReport, _ result: PreparedImage) -> String {
        let video = result.embeddedVideo.map { " (\($0.summary))" } ?? ""
        let removed = result.removedMetadata.sorted().map {
            $0 == .embeddedVideo ? $0.displayName + video : $0.displayName
        }
        .joined(separator: ",")
        let keptVideo = result.keptMetadata.contains(.embeddedVideo) ? ", kept: embedded video\(video)" : ""
        let quality =
            (result.quality.map { "q\($0)" } ?? result.method.rawValue)
            + (result.score.map { " (SSIMULACRA2 \(($0 * 10).rounded() / 10))" } ?? "")
        return
            "\(report.input) → \(report.output ?? "")\(report.service.map { " [\($0)]" } ?? ""): \(result.inputSize) → \(result.size), "
            + "\(report.inputBytes ?? 0) → \(report.bytes ?? 0) bytes, \(quality), "
            + "\(result.attempts.count) attempt(s), removed: \(removed.isEmpty ? "nothing" : removed)\(keptVideo)"
            + (result.appliedOrientation != .up ? ", orientation \(result.appliedOrientation.rawValue) applied" : "")
            + (result.adjustments.isEmpty ? "" : "; adjusted: " + result.adjustments.joined(separator: "; "))
            + (result.warnings.isEmpty ? "" : "; warnings: " + result.warnings.joined(separator: "; "))
    }

    /// One indented line per variant written beside an output: its file, size, bytes and what differs.
    static func describe(_ written: BatchVariantOutput, _ image: PreparedImage) -> String {
        let quality = image.quality.map { "q\($0)" } ?? image.method.rawValue
        return "  variant \(written.name) → \(written.output): \(image.size), \(written.bytes ?? 0) bytes, "
            + "\(image.format.rawValue.uppercased()) \(quality), \(image.attempts.count) attempt(s)"
            + (image.adjustments.isEmpty ? "" : "; adjusted: " + image.adjustments.joined(separator: "; "))
            + (image.warnings.isEmpty ? "" : "; warnings: " + image.warnings.joined(separator: "; "))
    }

    private func emit(_ line: String) {
        if toStandardError { printError(line) } else { print(line) }
    }

    /// The exit status the failures call for (docs/cli.md, "Exit status"), or nil when no file failed.
    var failureStatus: Int32? {
        internalFailures > 0 ? ExitStatus.internalError : failed > 0 ? ExitStatus.someFailed : nil
    }

    func summary() {
        if interactive { writeStandardError("\r\u{1B}[K") }
        var line = "processed \(processed), failed \(failed), skipped \(skipped), bytes \(bytesIn) → \(bytesOut)"
        if planned > 0 {
            line = "dry run: \(planned) output(s) planned, nothing written; failed \(failed), skipped \(skipped)"
        }
        if json || toStandardError {
            printError(line)
        } else {
            print(line)
        }
        fflush(nil)
    }
}

/// Removes in-flight temporary outputs on SIGINT/SIGTERM, then exits with 128 + signal.
enum SignalCleanup {
    nonisolated(unsafe) static var sources: [DispatchSourceSignal] = []

    /// One serial queue for both signals: a second signal arriving during the cleanup waits behind the
    /// first handler, which exits, instead of running a second exit() concurrently.
    static let queue = DispatchQueue(label: "sharepipe.signals")

    static func install() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler {
                SharePipe.removeTemporaryOutputs()
                writeStandardError("\ninterrupted: temporary files removed; re-run with --skip-existing to finish\n")
                exit(128 + signalNumber)
            }
            source.resume()
            sources.append(source)
        }
    }
}

/// `sharepipe services` as a text table.
enum ServicesTable {
    static func render(_ profiles: [ServiceProfile]) -> String {
        let header = ["name", "still bytes", "animated", "caps", "formats", "strip", "quality", "source (confidence)"]
        let rows = profiles.map { p -> [String] in
            var caps = ["short ≤ \(p.caps.shortEdge)"]
            if let v = p.caps.longEdge { caps.append("long ≤ \(v)") }
            if let v = p.caps.width { caps.append("w ≤ \(v)") }
            if let v = p.caps.height { caps.append("h ≤ \(v)") }
            if let v = p.caps.pixels { caps.append("px ≤ \(v)") }
            if let v = p.caps.edgeSum { caps.append("w+h ≤ \(v)") }
            var animated = p.animation.allowed ? (p.animation.maxBytes ?? p.maxStillBytes).description : "still only"
            if p.animation.allowed && p.animationOutput == .video {
                animated = "video " + (p.video.maxBytes ?? p.animation.maxBytes ?? p.maxStillBytes).description
                if let d = p.video.maxDurationMilliseconds { animated += " ≤ \(d / 1000) s" }
                if let r = p.video.minFrameRate { animated += " ≥ \(r) fps" }
            } else if p.animation.allowed {
                if let w = p.animation.maxWidth, let h = p.animation.maxHeight { animated += " \(w)×\(h)" }
                if let px = p.animation.maxPixels { animated += " px ≤ \(px)" }
                if let f = p.animation.maxFrames { animated += " ≤ \(f) frames" }
            }
            return [
                p.name, String(p.maxStillBytes), animated, caps.joined(separator: ", "),
                p.formats.map(\.rawValue).joined(separator: ","), p.strip.rawValue,
                p.qualityTarget.map { "\(QualitySetting.auto(target: $0)) (≥ q\(p.minQuality))" }
                    ?? "\(p.minQuality)–\(p.maxQuality)",
                "\(p.source) (\(p.confidence))",
            ]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        let lines = ([header] + rows).map { row in
            row.enumerated().map { $1.padding(widths[$0]) }.joined(separator: "  ").trimmingTrailingSpaces()
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
