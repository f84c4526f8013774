// In-process figures for SharePipe.prepare, one benchmark per input class:
// time per prepare (wall clock, CPU), malloc count and bytes (ordo-one/benchmark's malloc interposer),
// peak resident memory, and two custom memory metrics:
//   - "Peak live heap": the most heap (malloc'd and not yet freed) the prepare held at once, above what
//     was live when it started; exact, from the malloc interposer's allocation hook (see below).
//   - "Peak pixel bytes": the pipeline's own accounting (PreparedImage.peakPixelBytes).
//
// Inputs are the same cached files bench/compare generates (bench/.inputs/v2/, or
// SHAREPIPE_BENCH_INPUTS); when they are missing this runs `bench/compare --inputs-only` first.
// A format SharePipe cannot read yet is reported as unsupported and skipped; no numbers are invented.
//
// Run: cd bench && swift package --disable-sandbox benchmark

import Atomics
import Benchmark
import MallocInterposerSwift
import SharePipe

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// MARK: - Inputs

/// The cached inputs directory: $SHAREPIPE_BENCH_INPUTS, else bench/.inputs/v2 next to this package.
let benchDirectory: String = {
    // #filePath = <bench>/Benchmarks/PrepareBenchmarks/PrepareBenchmarks.swift
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    return parts.joined(separator: "/")
}()

let inputsDirectory: String = {
    if let path = getenv("SHAREPIPE_BENCH_INPUTS") { return String(cString: path) }
    return benchDirectory + "/.inputs/v2"
}()

func fileExists(_ path: String) -> Bool { access(path, R_OK) == 0 }

/// Generates the inputs with bench/compare when any is missing. Returns false (and says why) on failure.
func ensureInputs(_ names: [String]) -> Bool {
    if names.allSatisfy({ fileExists(inputsDirectory + "/" + $0) }) { return true }
    let command = "'\(benchDirectory)/compare' --inputs-only >&2"
    note("inputs missing in \(inputsDirectory); running \(command)")
    let status = system(command)
    if status != 0 || !names.allSatisfy({ fileExists(inputsDirectory + "/" + $0) }) {
        note("could not generate inputs (status \(status)); run bench/compare --inputs-only and retry")
        return false
    }
    return true
}

func note(_ message: String) {
    let line = Array("PrepareBenchmarks: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func readFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        if count == 0 { break }
        bytes.append(contentsOf: buffer[0..<count])
    }
    return bytes
}

// MARK: - Peak live heap

// ordo-one/benchmark counts malloc calls and bytes but has no peak-live-heap metric, and the sampled
// resident metrics miss what the allocator keeps between iterations. The malloc interposer's
// allocation hook gives an exact one: after every counted allocation, live bytes are
// (bytes allocated − bytes freed) since counting began; the hook keeps the maximum.

let liveHighWater = UnsafeAtomic<Int>.create(0)

func liveHeapBytes() -> Int {
    let statistics = MallocInterposerSwift.getStatistics()
    return statistics.mallocBytesCount - statistics.freeBytesCount
}

/// The allocation hook: runs inside malloc, so it must not allocate (getStatistics only reads counters).
let recordLiveHighWater: MallocInterposerSwift.AllocationHook = { _ in
    let live = liveHeapBytes()
    var seen = liveHighWater.load(ordering: .relaxed)
    while live > seen {
        let (exchanged, original) = liveHighWater.weakCompareExchange(
            expected: seen, desired: live, ordering: .relaxed)
        if exchanged { break }
        seen = original
    }
}

// MARK: - Benchmarks

extension BenchmarkMetric {
    static let peakLiveHeap: BenchmarkMetric = .custom("Peak live heap (bytes)", useScalingFactor: false)
    static let peakPixelBytes: BenchmarkMetric = .custom("Peak pixel bytes", useScalingFactor: false)
    static let outputBytes: BenchmarkMetric = .custom("Output bytes", useScalingFactor: false)
}

struct InputClass {
    var name: String
    var file: String
    var options: PrepareOptions
    /// Load the file into memory outside the measurement and prepare from `.bytes`.
    var fromMemory = false
}

let benchmarks: @Sendable () -> Void = {
    var capped480 = PrepareOptions()
    capped480.maxShortEdge = 480
    var byteLimited = PrepareOptions()
    byteLimited.maxBytes = 300_000
    // The crop around the focal point: the whole picture rendered at the window's scale, then cut (every row
    // already pays for the focal point itself, estimated on the placeholder's thumbnail).
    var croppedPortrait = PrepareOptions()
    croppedPortrait.cropTo = AspectRatio(width: 4, height: 5)

    let classes = [
        InputClass(
            name: "JPEG baseline 24 MP → 1080 (file)", file: "jpeg-baseline-24mp.jpg", options: PrepareOptions()),
        InputClass(
            name: "JPEG baseline 24 MP → 1080 (bytes)", file: "jpeg-baseline-24mp.jpg", options: PrepareOptions(),
            fromMemory: true),
        InputClass(
            name: "JPEG progressive 24 MP → 1080 (file)", file: "jpeg-progressive-24mp.jpg",
            options: PrepareOptions()),
        InputClass(
            name: "JPEG baseline 24 MP → 1080, ≤300 KB (file)", file: "jpeg-baseline-24mp.jpg",
            options: byteLimited),
        InputClass(
            name: "JPEG baseline 24 MP → 1080, crop 4:5 (file)", file: "jpeg-baseline-24mp.jpg",
            options: croppedPortrait),
        InputClass(name: "JPEG baseline 6 MP → 1080 (file)", file: "jpeg-6mp.jpg", options: PrepareOptions()),
        InputClass(name: "JPEG baseline 48 MP → 1080 (file)", file: "jpeg-48mp.jpg", options: PrepareOptions()),
        InputClass(name: "PNG RGBA 6000×4000 → 1080 (file)", file: "png-rgba-24mp.png", options: PrepareOptions()),
        InputClass(name: "GIF 100 frames 800×600 → 480 (file)", file: "gif-100f-800x600.gif", options: capped480),
    ]

    guard ensureInputs(Array(Set(classes.map(\.file)))) else { return }

    let configuration = Benchmark.Configuration(
        metrics: [
            .wallClock, .cpuTotal, .mallocCountTotal, .mallocBytesCount, .peakMemoryResident,
            .peakMemoryResidentDelta, .peakLiveHeap, .peakPixelBytes, .outputBytes,
        ],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 20,
        setup: { MallocInterposerSwift.setAllocationHook(recordLiveHighWater) },
        teardown: { MallocInterposerSwift.setAllocationHook(nil) }
    )

    for inputClass in classes {
        let path = inputsDirectory + "/" + inputClass.file
        let source: ImageSource
        if inputClass.fromMemory {
            guard let bytes = readFile(path) else { note("\(inputClass.name): cannot read \(path)"); continue }
            source = .bytes(bytes)
        } else {
            source = .file(path: path)
        }
        // One untimed prepare decides whether this class runs at all: a format SharePipe does not
        // support yet is reported and skipped rather than measured.
        do {
            _ = try SharePipe.prepare(source, options: inputClass.options)
        } catch let error as SharePipeError {
            if case .unsupportedFormat = error {
                note("\(inputClass.name): unsupported — \(error)")
            } else {
                note("\(inputClass.name): skipped — \(error)")
            }
            continue
        } catch {
            note("\(inputClass.name): skipped — \(error)")
            continue
        }

        Benchmark(inputClass.name, configuration: configuration) { benchmark in
            let liveAtStart = liveHeapBytes()
            liveHighWater.store(liveAtStart, ordering: .relaxed)
            benchmark.startMeasurement()
            let result: PreparedImage
            do {
                result = try SharePipe.prepare(source, options: inputClass.options)
            } catch {
                benchmark.stopMeasurement()
                fatalError("\(inputClass.name): \(error)")
            }
            benchmark.stopMeasurement()
            benchmark.measurement(.peakLiveHeap, liveHighWater.load(ordering: .relaxed) - liveAtStart)
            benchmark.measurement(.peakPixelBytes, result.peakPixelBytes)
            benchmark.measurement(.outputBytes, result.byteCount)
            blackHole(result)
        }
    }
}
