import Foundation
import Testing
@testable import SharePipe

/// What a caller of the public API sees: names that print as reports write them, cancellation as
/// documented, errors that quote each other without string slicing, and the one lock.
@Suite struct APISurfaceTests {
    @Test func metadataKindPrintsItsName() {
        #expect("\(MetadataKind.gps)" == "gps")
        #expect([MetadataKind.exif, .xmp].map(String.init(describing:)) == ["exif", "xmp"])
    }

    @Test("cancelling the free function's Task before it starts throws SharePipeError.cancelled")
    func cancelledBeforeStart() async throws {
        let path = Fixtures.path("gif/single-frame.gif")
        let task = Task {
            while !Task.isCancelled { await Task.yield() }
            return try await SharePipe.prepare(.file(path: path))
        }
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("a cancelled task produced an image")
        } catch let error as SharePipeError {
            #expect(error == .cancelled(file: path))
        }
    }

    @Test func errorsSplitIntoFileAndReason() {
        let error = SharePipeError.corrupt(file: "a.jpg", phase: .decode, reason: "bad data")
        #expect(error.file == "a.jpg")
        #expect(error.reason == "corrupt image: bad data")
        #expect(error.description == "a.jpg: corrupt image: bad data")
        let invalid = SharePipeError.invalidOptions(InvalidOption("quality", expected: "1...100", found: "0"))
        #expect(invalid.file == nil)
        #expect(invalid.description == "invalid options: expected 1...100 for `quality`, got 0")
    }

    @Test("the one lock serialises concurrent updates")
    func mutexSerialises() {
        let meter = PixelMemoryMeter()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { meter.allocate(1); meter.release(1) }
        }
        #expect(meter.currentBytes == 0)
        #expect(meter.peakBytes >= 1 && meter.peakBytes <= 8)
    }

    /// Every format has its own media type (the example server's Content-Type).
    @Test func everyFormatHasItsMediaType() {
        let types = ImageFormat.allCases.map(\.mediaType)
        #expect(Set(types).count == ImageFormat.allCases.count)
        #expect(ImageFormat.jpeg.mediaType == "image/jpeg" && ImageFormat.webp.mediaType == "image/webp")
        // MP4 (animations written as video) is the one video type.
        #expect(types.allSatisfy { $0.hasPrefix("image/") || $0 == "video/mp4" })
    }
}
