/// HEIF/HEIC and AVIF share the ISO base media file format: their descriptors (`FormatRegistry.heif`,
/// `FormatRegistry.avif`) tell them apart by the `ftyp` box's brands.
enum HEIFBrands {
    /// HEIF (HEIC) or AVIF by the `ftyp` box: the major brand, and for the structural brands mif1/msf1 the
    /// compatible brands within `prefix` (an AVIF may name mif1 first); nil for anything else.
    static func family(_ prefix: [UInt8]) -> ImageFormat? {
        guard prefix.count >= 12, prefix[4..<8].elementsEqual(Array("ftyp".utf8)) else { return nil }
        let brand = { (at: Int) in String(decoding: prefix[at..<at + 4], as: UTF8.self) }
        let major = brand(8)
        if ["avif", "avis"].contains(major) { return .avif }
        if ["heic", "heix", "heim", "heis", "hevc", "hevx"].contains(major) { return .heif }
        guard ["mif1", "msf1"].contains(major) else { return nil }
        let boxSize = Int(prefix[0]) << 24 | Int(prefix[1]) << 16 | Int(prefix[2]) << 8 | Int(prefix[3])
        let compatible = stride(from: 16, to: min(boxSize, prefix.count) - 3, by: 4).map(brand)
        return compatible.contains("avif") || compatible.contains("avis") ? .avif : .heif
    }
}
