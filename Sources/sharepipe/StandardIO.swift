import ArgumentParser
import SharePipe
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// `prepare -` and `--out -`: one image through standard input and/or output. Standard input is held in
/// memory (one image, limited by --max-input-bytes); with `--out -` nothing is written to a file.
struct StandardIO {
    let batch: Batch
    let input: String
    let json: Bool
    let report: AppendOnlyFile?
    /// Enters the sandbox, once the output folder is there.
    let confine: () throws -> Void

    func run() throws {
        let toStandardOutput = batch.outputDirectory == "-"
        let source: ImageSource
        if input == "-" {
            let limit = batch.targets.map(\.options.limits.maxInputBytes).max() ?? Int.max
            guard let bytes = readStandardInput(limit: limit) else {
                printError("FAILED <stdin>: too large: exceeds the input limit of \(limit) bytes")
                throw ExitCode(ExitStatus.someFailed)
            }
            source = .bytes(bytes)
        } else {
            source = .file(path: input)
        }
        if !toStandardOutput {
            do { try batch.checkOutputDirectory() } catch {
                throw fatal("cannot write to --out \(batch.outputDirectory): \(PrepareCommand.reason(error))")
            }
        }
        try confine()
        let reporter = Reporter(json: json, report: report, toStandardError: toStandardOutput)
        let reports = batch.process(
            source, named: input == "-" ? "stdin" : input,
            sink: toStandardOutput ? { try writeStandardOutput($0.bytes) } : nil)
        for each in reports { reporter.fileDone(each) }
        reporter.summary()
        if let status = reporter.failureStatus { throw ExitCode(status) }
    }

    /// Standard input whole, or nil past `limit` bytes.
    private func readStandardInput(limit: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let got = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { return bytes }
            bytes += chunk[0..<got]
            if bytes.count > limit { return nil }
        }
    }

    private func writeStandardOutput(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                throw SharePipeError.unwritable(file: "<stdout>", reason: String(cString: strerror(errno)))
            }
            offset += written
        }
    }
}
