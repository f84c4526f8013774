/// SharePipe's own readers of HEIF/AVIF boxes (no library) run on one input, with what they found laid out for a
/// caller to check: the fuzz target `FuzzHEIFBoxes` calls it on every input and checks the findings against the
/// file (offsets within it, counts that agree, the refusals that follow from the boxes). Not API: `@_spi(Fuzzing)`.
@_spi(Fuzzing) public enum HEIFBoxReaders {
    /// A run of bytes an item's location or a tile names.
    public struct Extent: Sendable, Equatable {
        public var offset: Int
        public var length: Int
    }

    /// One `ipma` association as read.
    public struct Association: Sendable, Equatable {
        public var item: Int
        /// The 1-based `ipco` index (0: none).
        public var index: Int
        public var essential: Bool
    }

    /// The grid the tile route would decode (`HEIFGrid.plan`), as numbers.
    public struct Grid: Sendable, Equatable {
        public var columns: Int, rows: Int
        public var width: Int, height: Int
        public var tileWidth: Int, tileHeight: Int
        public var displayedWidth: Int, displayedHeight: Int
        public var chroma: Int
        public var parameterSetCount: Int
        /// Each tile's index into the parameter sets, and its coded data.
        public var tileParameterSets: [Int]
        public var tileExtents: [[Extent]]
        public var isSingleImage: Bool
    }

    /// What the readers found.
    public struct Findings: Sendable {
        /// HEIF or AVIF by the `ftyp` brands; nil for neither (then nothing else is read).
        public var family: ImageFormat?
        /// Whether the `meta` box was found (within the metadata limit) and read whole by `HEIFItemTable`.
        public var metaFound = false, tableRead = false
        public var primary: Int?
        public var itemTypes: [Int: String] = [:]
        public var locations: [Int: [Extent]] = [:]
        /// The `ipco` property types in order.
        public var propertyTypes: [String] = []
        public var associations: [Association] = []
        /// The first non-essential transform `HEIFItemTable.nonEssentialTransform` reports.
        public var nonEssentialTransform: (item: Int, property: String)?
        /// The coded image types (`codedImageTypes`) and the tracks' sample entry types.
        public var codedImageTypes: Set<String> = []
        public var sampleEntryTypes: [String] = []
        public var grid: Grid?
        /// HDR boxes (`HEIFHDRBoxes`): MaxCLL and the gain map's description.
        public var peakLuminance: Float?
        public var gainMap: String?
        /// C2PA manifest stores found as top-level boxes and as items.
        public var credentialBoxes = 0, credentialItems = 0
    }

    /// Runs every reader on `bytes` (named `name` in errors) with `maxMetadataBytes` as the metadata limit.
    /// Throws what a reader throws (always a `SharePipeError` naming `name`).
    public static func read(_ bytes: [UInt8], name: String, maxMetadataBytes: Int) throws -> Findings {
        var findings = Findings()
        findings.family = HEIFBrands.family(Array(bytes.prefix(64)))
        guard let family = findings.family else { return findings }
        let file = HEIFFileBytes(memory: bytes, name: name)
        let limits = ImageLimits(maxMetadataBytes: maxMetadataBytes)
        if let meta = try file.metaBody(maxBytes: maxMetadataBytes) {
            findings.metaFound = true
            if let table = try? HEIFItemTable.parse(meta: meta) {
                findings.tableRead = true
                findings.primary = table.primary
                findings.itemTypes = table.itemTypes
                findings.locations = table.locations.mapValues {
                    $0.extents.map { Extent(offset: $0.offset, length: $0.length) }
                }
                findings.propertyTypes = table.properties.map(\.type)
                for item in table.associations.keys.sorted() {
                    for association in table.associations[item] ?? [] {
                        findings.associations.append(
                            Association(item: item, index: association.index, essential: association.essential))
                    }
                }
                findings.nonEssentialTransform = table.nonEssentialTransform()
                findings.codedImageTypes = table.codedImageTypes
            }
        }
        findings.sampleEntryTypes = try file.sampleEntryTypes()
        if let grid = try HEIFGrid.plan(file, limits: limits) {
            findings.grid = Grid(
                columns: grid.columns, rows: grid.rows, width: grid.size.width, height: grid.size.height,
                tileWidth: grid.tileSize.width, tileHeight: grid.tileSize.height,
                displayedWidth: grid.displayedSize.width, displayedHeight: grid.displayedSize.height,
                chroma: Int(grid.chroma), parameterSetCount: grid.parameterSets.count,
                tileParameterSets: grid.tileParameterSets,
                tileExtents: grid.tileExtents.map { $0.map { Extent(offset: $0.offset, length: $0.length) } },
                isSingleImage: grid.isSingleImage)
        }
        let hdr =
            family == .avif
            ? try HEIFHDRBoxes.readAVIF(file, maxBytes: maxMetadataBytes)
            : try HEIFHDRBoxes.read(file, maxBytes: maxMetadataBytes)
        findings.peakLuminance = hdr.peakLuminance
        findings.gainMap = hdr.gainMap
        findings.credentialBoxes = try ContentCredentials.heifBoxes(file, maxBytes: maxMetadataBytes).count
        findings.credentialItems = try ContentCredentials.heifItems(file, maxBytes: maxMetadataBytes).count
        return findings
    }

    /// The checks made before any decoder library (`FormatFamilyGate`) with `disabled` turned off, on `bytes` as
    /// an upload (`<memory>`): throws the refusal (`unsupportedFormat`, `corrupt`), as `SharePipe.prepare` would
    /// before reaching libheif or libavif.
    public static func gate(_ bytes: [UInt8], disabled: Set<FormatFamily>, maxMetadataBytes: Int) throws {
        guard let format = HEIFBrands.family(Array(bytes.prefix(64))) else { return }
        let limits = ImageLimits(maxMetadataBytes: maxMetadataBytes, disabledFormats: disabled)
        try FormatFamilyGate.check(.bytes(bytes), format: format, limits: limits)
    }
}
