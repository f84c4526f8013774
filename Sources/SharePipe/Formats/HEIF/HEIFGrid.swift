/// A primary image of type `grid` whose tiles are HEVC (`hvc1`), as phones store photos (an iPhone's 12 MP
/// photo is 8×6 tiles of 512×512), read from the file's own boxes so that it can be decoded one row of tiles
/// at a time (`HEIFTileDecoding`). libheif 1.15 cannot do that: it decodes every tile into one full-size image.
/// A primary image that is one HEVC image (`hvc1`: what converters, some cameras and editors write) is read
/// the same way as a grid of one tile (`isSingleImage`), so it too is decoded by libde265 alone and its rows
/// converted from libde265's picture, without libheif's copy of the planes.
///
/// Only what this route handles exactly as libheif would is accepted; for anything else `plan` returns nil
/// and the libheif route decodes the file as before: tiles that are not `hvc1` (AVIF grids), more than 8
/// bits, monochrome, odd tile sizes with subsampled chroma, NAL lengths other than 4 bytes, tiles or grid with
/// properties other than those listed in `gridProperties` / `tileProperties` (`clap`, for one), tile data in
/// `idat` or in other files, protected items, `iovl` overlays, in-band parameter sets, tiles whose colour
/// (their nclx, else their SPS's VUI) differs, cannot be read or is matrix 12. Alpha is checked by the caller
/// (libheif's has_alpha): a grid with an alpha image goes to libheif. So everything that needs libheif is
/// known before any tile is decoded, and the route never hands a file over half-way.
struct HEIFGrid: Equatable, Sendable {
    /// A run of bytes in the file (`iloc` extent).
    struct Extent: Equatable, Sendable {
        var offset: Int
        var length: Int
    }

    var columns: Int
    var rows: Int
    /// The grid's output size as coded (before `irot`/`imir`).
    var size: PixelSize
    /// Every tile's coded size (ispe; all equal).
    var tileSize: PixelSize
    /// chroma_format_idc of every tile: 1 4:2:0, 2 4:2:2, 3 4:4:4.
    var chroma: Int32
    /// Each distinct hvcC's parameter sets as 4-byte length-prefixed NAL units.
    var parameterSets: [[UInt8]]
    /// For each tile (row-major): the index of its parameter sets, and its coded data.
    var tileParameterSets: [Int]
    var tileExtents: [[Extent]]
    /// The transforms (`irot`, `imir`, in their `ipma` order) as the orientation that turns the coded image
    /// into the displayed one.
    var orientation: Orientation
    /// The tiles' own nclx (`colr` on the tile items; all tiles alike), which libheif converts each tile with.
    /// Without one, libheif uses each tile's bitstream VUI (`HEIFTileDecoding` does the same).
    var tileColour: Colour?
    /// The colour description of the tiles' SPS (`sequenceParameters`: the VUI as libde265 reports it; every
    /// tile's alike), read from the hvcC before anything is decoded. nil only where `tileColour` decides and
    /// the SPS's could not be read.
    var bitstreamColour: Colour?

    /// Whether the primary image is a single HEVC image (`hvc1`), read as a grid of one tile: the item itself,
    /// with the transforms and colour of its own properties. `HEIFTileDecoding` converts its rows straight
    /// from libde265's picture instead of copying the tile.
    var isSingleImage = false

    /// The colour each tile is converted with: the tiles' nclx, else their SPS's VUI. The plan only takes a
    /// grid whose colour SharePipe converts (not matrix 12), so nothing found while decoding hands it to libheif.
    /// A single image likewise: its item's nclx, else its SPS's VUI. (libheif 1.15 attaches no nclx to a single
    /// image's planes, but the colours its route gave match the VUI's: on the corpus's example.heic, whose VUI
    /// is not BT.601 full range, converting with BT.601 full range moved pixels by up to 46 levels, the VUI by
    /// up to 24 at hard edges.)
    var colour: Colour? { tileColour ?? bitstreamColour }

    /// The H.273 code points of an nclx description.
    struct Colour: Equatable, Sendable {
        var primaries: Int, transfer: Int, matrix: Int
        var fullRange: Bool
    }

    /// The size as displayed.
    var displayedSize: PixelSize { orientation.swapsAxes ? size.transposed : size }

    /// Properties of the grid item this route applies (`irot`, `imir`) or can leave to others (`ispe` checked,
    /// `colr` read by libheif for the colour, `pixi` restated by hvcC). Any other one sends the file to libheif.
    static let gridProperties: Set<String> = ["ispe", "colr", "pixi", "irot", "imir"]
    static let tileProperties: Set<String> = ["hvcC", "ispe", "colr", "pixi"]
    // A single image's item has both sets (the union).

    /// The grid of `source`'s primary image, or nil when the primary image is not a grid this route decodes.
    /// Reads the top-level box headers, the `meta` box (at most `limits.maxMetadataBytes`) and the grid
    /// descriptor; no tile data. Throws when the file cannot be read, and `tooLarge` when a tile's size is
    /// over `limits` (the probe and the render both get their grid here, so no size arithmetic on the route
    /// ever sees an unchecked tile).
    static func plan(_ file: HEIFFileBytes, limits: ImageLimits) throws -> HEIFGrid? {
        guard let meta = try file.metaBody(maxBytes: limits.maxMetadataBytes),
            let grid = try? parse(meta: meta, fileSize: file.size, read: { try file.read(at: $0, count: $1) })
        else { return nil }
        try limits.check(width: grid.tileSize.width, height: grid.tileSize.height, file: file.name)
        for extents in grid.tileExtents where try !unitsAreSlices(extents, file: file) { return nil }
        return grid
    }

    /// Whether a tile's coded data is whole 4-byte length-prefixed NAL units, none of them a parameter set
    /// (VPS, SPS, PPS in the data would replace the hvcC's checked ones): what would otherwise send the file to
    /// libheif only after rows were decoded. One read of 5 bytes per NAL unit.
    static func unitsAreSlices(_ extents: [Extent], file: HEIFFileBytes) throws -> Bool {
        let total = extents.reduce(0) { $0 + $1.length }
        /// `count` bytes at `position` of the tile's data (its extents one after another).
        func bytes(at position: Int, count: Int) throws -> [UInt8] {
            var out: [UInt8] = [], skip = position, left = count
            for extent in extents where left > 0 {
                if skip >= extent.length { skip -= extent.length; continue }
                let here = min(left, extent.length - skip)
                out += try file.read(at: extent.offset + skip, count: here)
                left -= here
                skip = 0
            }
            return out
        }
        var position = 0
        while position < total {
            guard total - position >= 4 else { return false }
            let head = try bytes(at: position, count: min(5, total - position))
            let length = head[0..<4].reduce(0) { $0 << 8 | Int($1) }
            guard length <= total - position - 4 else { return false }
            if length > 0, (32...34).contains(Int(head[4] >> 1) & 0x3F) { return false }
            position += 4 + length
        }
        return true
    }

    /// The largest tile side the route takes (HEVC's levels stop far below it): tile sizes and areas, and the
    /// memory priced from them, stay far from overflowing whatever the limits are. Larger tiles go to libheif.
    static let maxTileSide = 65_535

    /// The orientation of applying `first` and then `second` to a picture.
    static func compose(_ first: Orientation, _ second: Orientation) -> Orientation {
        // Follow three labelled pixels of a 3×2 picture through both transforms.
        let probe = Bitmap(size: PixelSize(width: 3, height: 2), layout: .gray, pixels: [0, 1, 2, 3, 4, 5])
        let result = probe.applying(first).applying(second)
        return Orientation.allCases.first { probe.applying($0) == result } ?? .up
    }
}
