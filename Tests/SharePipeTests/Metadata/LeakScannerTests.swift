import Foundation
import Testing
@testable import SharePipe

/// The leak scanner finds a planted marker in each encoding it claims, wherever it sits, and nothing where
/// there is none: a scanner blind to an encoding would let the metadata tests pass on a leak.
@Suite("Leak scanner")
struct LeakScannerTests {
    static let marker = "SPMARK-Kx9"
    /// Bytes around the marker, including every byte value, so neighbours cannot help or hide a match.
    static let noise: [UInt8] = (0..<300).map { UInt8(($0 * 37 + 11) & 0xFF) }

    static func planted(_ encoded: [UInt8], at offset: Int) -> [UInt8] {
        Array(noise.prefix(offset)) + encoded + Array(noise.dropFirst(offset))
    }

    @Test("each text encoding is found at every alignment, and only that one is reported")
    func textEncodings() {
        let text = Array(Self.marker.utf8)
        let cases: [(LeakScanner.Encoding, [UInt8])] = [
            (.ascii, text),
            (.utf16LE, text.flatMap { [$0, 0] }),
            (.utf16BE, text.flatMap { [0, $0] }),
            (.hexLower, LeakScanner.hex(text, upper: false)),
            (.hexUpper, LeakScanner.hex(text, upper: true)),
        ]
        for (encoding, encoded) in cases {
            for offset in [0, 1, 2, 5, 100, 300] {
                let found = LeakScanner.findings(of: Self.marker, in: Self.planted(encoded, at: offset))
                #expect(found.contains(encoding), "\(encoding) at \(offset): \(found)")
            }
        }
        #expect(LeakScanner.findings(of: Self.marker, in: Self.noise).isEmpty)
    }

    @Test("XMP text, an Exif ASCII value and Base64 (an XMP thumbnail) are found")
    func containers() throws {
        let xmp = Array("<x:xmpmeta><rdf:li>\(Self.marker)</rdf:li></x:xmpmeta>".utf8)
        #expect(LeakScanner.findings(of: Self.marker, in: xmp).contains(.ascii))
        // An Exif Artist tag (ASCII, stored at an offset).
        var tiff = CraftedTIFF(size: 64)
        tiff.put(Array((Self.marker + "\0").utf8), at: 40)
        tiff.ifd(at: 8, [CraftedTIFF.ascii(0x013B, count: Self.marker.utf8.count + 1, at: 40)])
        #expect(try ExifEditor(tiff: tiff.bytes).string(0x013B) == Self.marker)
        #expect(LeakScanner.findings(of: Self.marker, in: tiff.bytes).contains(.ascii))
        for prefix in ["", "a", "ab", "abc"] {
            let encoded = Array(Data((prefix + Self.marker + "tail").utf8).base64EncodedString().utf8)
            #expect(
                LeakScanner.findings(of: Self.marker, in: Self.noise + encoded).contains(.base64), "prefix \(prefix)")
        }
    }

    @Test("hex text wrapped over lines (ImageMagick raw profiles) is found")
    func wrappedHex() {
        let hex = LeakScanner.hex(Array(Self.marker.utf8), upper: false)
        let wrapped = Array(hex[..<7]) + [0x0A] + Array(hex[7..<13]) + [0x0D, 0x0A, 0x20] + Array(hex[13...])
        #expect(LeakScanner.findings(of: Self.marker, in: Self.planted(wrapped, at: 9)).contains(.hexLower))
    }

    @Test("a planted GPS coordinate is found as Exif rationals in both byte orders and as text")
    func coordinate() {
        let point = PlantedCoordinate(degrees: 48, minutes: 51, secondsNumerator: 2988)
        #expect(
            LeakScanner.findings(of: point, in: Self.planted(point.rationals(littleEndian: true), at: 3)) == [
                .rationalsLE
            ])
        #expect(
            LeakScanner.findings(of: point, in: Self.planted(point.rationals(littleEndian: false), at: 4)) == [
                .rationalsBE
            ])
        #expect(point.decimalText == "48.8583")
        #expect(
            LeakScanner.findings(of: point, in: Self.planted(Array(point.decimalText.utf8), at: 0)).contains(
                .decimalText))
        #expect(
            LeakScanner.findings(
                of: point, in: Self.planted(Array("exif:GPSLatitude=\"\(point.xmpText)N\"".utf8), at: 7)
            )
            .contains(.xmpText))
        #expect(LeakScanner.findings(of: point, in: Self.noise).isEmpty)
        // A coordinate planted in a real Exif GPS IFD (big-endian) is seen there.
        #expect(!LeakScanner.findings(of: Plant.coordinate, in: Plant.payload("x")).isEmpty)
    }

    @Test("every planting helper's payload is visible to the scanner in every encoding it carries")
    func plantedPayloads() {
        let found = LeakScanner.findings(of: Self.marker, in: Plant.payload(Self.marker))
        #expect(found.isSuperset(of: [.ascii, .utf16LE, .hexUpper]), "\(found)")
    }
}
