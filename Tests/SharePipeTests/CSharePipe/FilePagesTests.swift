import CSharePipe
import Testing

@testable import SharePipe

/// `sp_file_pages_unmap` (`ProcessAllocator.unmapCodeAtPhases`): the code and constants it unmaps are mapped
/// again where touched, so everything runs as before.
struct FilePagesTests {
    @Test func codeUnmappedRunsAgainWithTheSameResults() throws {
        let bitmap = Bitmap(
            size: PixelSize(width: 96, height: 64), layout: .rgb,
            pixels: (0..<96 * 64 * 3).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 288) })
        let settings = EncodeSettings(quality: 80, progressive: false)
        let before = try JPEGEncoder().encode(bitmap, settings: settings, metadata: [])
        let scoreBefore = try JPEGEncoder.ssimulacra2(before, against: bitmap)
        #if os(Linux)
            // At least the test binary's own code is a private read-only file mapping.
            #expect(sp_file_pages_unmap() > 0)
        #endif
        let after = try JPEGEncoder().encode(bitmap, settings: settings, metadata: [])
        #expect(after == before)
        #expect(try JPEGEncoder.ssimulacra2(after, against: bitmap) == scoreBefore)
    }

    @Test func eachPhaseUnmapsOnlyWhenTheProcessAskedAndOnce() {
        // The test process never called sp_file_pages_release_at_phases: the phases leave the pages alone.
        #expect(sp_file_pages_phase_starts(SP_FILE_PAGES_RENDER) == 0)
        #expect(sp_file_pages_phase_starts(SP_FILE_PAGES_PHASES) == 0)
    }
}
