import Foundation
import Testing

/// A GPS coordinate planted in a test file, as Exif stores it: degrees, minutes and seconds as three RATIONALs
/// (numerator, denominator; 8 bytes each), in either byte order; and as text (XMP's "52,31.2057N", decimals).
struct PlantedCoordinate: Sendable {
    var degrees: UInt32
    var minutes: UInt32
    /// Seconds × `secondsDenominator` (12.34″ is 1234 over 100).
    var secondsNumerator: UInt32
    var secondsDenominator: UInt32 = 100

    /// The 24 bytes of the three rationals in one byte order.
    func rationals(littleEndian: Bool) -> [UInt8] {
        [degrees, 1, minutes, 1, secondsNumerator, secondsDenominator].flatMap { value -> [UInt8] in
            let bytes = (0..<4).map { UInt8((value >> (8 * UInt32($0))) & 0xFF) }
            return littleEndian ? bytes : bytes.reversed()
        }
    }

    /// The coordinate in decimal degrees with four places ("52.5201"), as text writers print it.
    var decimalText: String {
        let value =
            Double(degrees) + Double(minutes) / 60 + Double(secondsNumerator) / Double(secondsDenominator) / 3600
        return String(format: "%.4f", value)
    }

    /// XMP's degrees,minutes form ("52,31.2057").
    var xmpText: String {
        let minutes = Double(self.minutes) + Double(secondsNumerator) / Double(secondsDenominator) / 60
        return "\(degrees),\(String(format: "%.4f", minutes))"
    }
}

/// Scans output bytes for markers a test planted in its input, in every encoding a metadata block can carry
/// them: plain ASCII (which is also how XMP text and Exif ASCII values hold them), UTF-16 in both byte orders,
/// hex text (upper or lower case, across line breaks: ImageMagick's raw profiles), Base64 (XMP thumbnails),
/// and, for a planted coordinate, the Exif rationals in both byte orders and the usual text forms.
///
/// Use `expectPlanted` on the input before `expectAbsent` on the output: a marker the scanner cannot see in the
/// input fails the test that planted it, so no test can pass by planting something the scanner is blind to.
enum LeakScanner {
    /// One way a marker was found.
    enum Encoding: String, CaseIterable, Sendable {
        case ascii, utf16LE, utf16BE, hexLower, hexUpper, base64
        case rationalsLE, rationalsBE, decimalText, xmpText
    }

    /// Every encoding in which `marker` (ASCII) occurs in `bytes`.
    static func findings(of marker: String, in bytes: [UInt8]) -> Set<Encoding> {
        let text = Array(marker.utf8)
        var found = Set<Encoding>()
        if contains(bytes, text) { found.insert(.ascii) }
        if contains(bytes, text.flatMap { [$0, 0] }) { found.insert(.utf16LE) }
        if contains(bytes, text.flatMap { [0, $0] }) { found.insert(.utf16BE) }
        let hexDigits = bytes.filter { !($0 == 0x0A || $0 == 0x0D || $0 == 0x20 || $0 == 0x09) }
        if contains(hexDigits, hex(text, upper: false)) { found.insert(.hexLower) }
        if contains(hexDigits, hex(text, upper: true)) { found.insert(.hexUpper) }
        if base64Forms(text).contains(where: { contains(bytes, $0) }) { found.insert(.base64) }
        return found
    }

    /// Every encoding in which `coordinate` occurs in `bytes`.
    static func findings(of coordinate: PlantedCoordinate, in bytes: [UInt8]) -> Set<Encoding> {
        var found = Set<Encoding>()
        if contains(bytes, coordinate.rationals(littleEndian: true)) { found.insert(.rationalsLE) }
        if contains(bytes, coordinate.rationals(littleEndian: false)) { found.insert(.rationalsBE) }
        if contains(bytes, Array(coordinate.decimalText.utf8)) { found.insert(.decimalText) }
        if contains(bytes, Array(coordinate.xmpText.utf8)) { found.insert(.xmpText) }
        return found
    }

    /// Records an issue unless the scanner sees `marker` in `input`: the planting itself is checked.
    static func expectPlanted(_ marker: String, in input: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            !findings(of: marker, in: input).isEmpty,
            "the scanner cannot see the planted marker \(marker) in the input",
            sourceLocation: sourceLocation)
    }

    /// Records an issue unless the scanner sees `coordinate` in `input`.
    static func expectPlanted(
        _ coordinate: PlantedCoordinate, in input: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            !findings(of: coordinate, in: input).isEmpty, "the scanner cannot see the planted coordinate in the input",
            sourceLocation: sourceLocation)
    }

    /// Records an issue for each encoding of `marker` found in `output`.
    static func expectAbsent(
        _ marker: String, in output: [UInt8], _ context: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let found = findings(of: marker, in: output)
        #expect(
            found.isEmpty, "\(marker) leaked \(context) as \(found.map(\.rawValue).sorted())",
            sourceLocation: sourceLocation)
    }

    /// Records an issue for each encoding of `coordinate` found in `output`.
    static func expectAbsent(
        _ coordinate: PlantedCoordinate, in output: [UInt8], _ context: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let found = findings(of: coordinate, in: output)
        #expect(
            found.isEmpty, "the planted coordinate leaked \(context) as \(found.map(\.rawValue).sorted())",
            sourceLocation: sourceLocation)
    }

    /// Records an issue unless `marker` is in `output` (for `none`, where it must survive).
    static func expectPresent(
        _ marker: String, in output: [UInt8], _ context: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            !findings(of: marker, in: output).isEmpty, "\(marker) should have been kept \(context)",
            sourceLocation: sourceLocation)
    }

    // MARK: Encodings

    static func hex(_ bytes: [UInt8], upper: Bool) -> [UInt8] {
        Array(bytes.map { String(format: upper ? "%02X" : "%02x", $0) }.joined().utf8)
    }

    /// The part of the marker's Base64 that is the same wherever the marker starts (three alignments).
    static func base64Forms(_ bytes: [UInt8]) -> [[UInt8]] {
        (0..<3).compactMap { shift in
            // Bytes before the marker shift its Base64 by `shift`; the groups that hold only marker bytes are stable.
            let padded = [UInt8](repeating: 0, count: shift) + bytes
            let encoded = Array(Data(padded).base64EncodedString().utf8)
            let start = ((shift + 2) / 3) * 4
            let fullGroups = (padded.count / 3) * 4
            guard fullGroups - start >= 8 else { return nil }
            return Array(encoded[start..<fullGroups])
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return false }
        let first = needle[0]
        var index = 0
        let last = haystack.count - needle.count
        return haystack.withUnsafeBufferPointer { hay in
            needle.withUnsafeBufferPointer { pin in
                while index <= last {
                    if hay[index] == first, memcmp(hay.baseAddress! + index, pin.baseAddress!, pin.count) == 0 {
                        return true
                    }
                    index += 1
                }
                return false
            }
        }
    }
}
