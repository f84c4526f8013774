@_spi(Fuzzing) import SharePipe
import FuzzSupport

/// libFuzzer's entry: SharePipe's own HEIF/AVIF box readers (no library) on one input: `meta` (`iinf`, `iloc`,
/// `iref`, `ipco`/`ipma`, `idat`), the grid route's plan (grid descriptor, tiles' `hvcC` and SPS, their NAL
/// units), the tracks' sample entries, the HDR boxes, the C2PA boxes and items, and the checks made before any
/// decoder (`--disable`, non-essential transforms). Inputs whose `ftyp` is neither HEIF nor AVIF are rejected.
/// Besides crashes, hangs and leaks, any of these is a failure:
/// - an error that is not a `SharePipeError`, or that does not name the input;
/// - a grid whose tile count is not rows × columns, a tile's data outside the file or empty, a parameter-set
///   index out of range, tiles that do not cover the image or overhang it by a whole tile, a displayed size
///   that is not the coded size (turned or not);
/// - a non-essential transform reported that `ipma` does not show, or one `ipma` shows not reported;
/// - the gate refusing under `--disable avif` an HEIF none of whose items or tracks is AV1, or letting one
///   through that has one; refusing a file as corrupt other than for a non-essential transform;
/// - two reads of the same bytes that disagree.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHEIFBoxes(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    guard let format = ImageFormat.sniff(Array(bytes.prefix(64))), format == .heif || format == .avif else {
        return -1
    }
    let name = "upload.heic"
    // The metadata limit from the length, so both the walk over a large `meta` and the refusal of one are reached.
    let maxMetadataBytes = count % 3 == 0 ? 256 : 1 << 20
    let findings: HEIFBoxReaders.Findings
    do {
        findings = try HEIFBoxReaders.read(bytes, name: name, maxMetadataBytes: maxMetadataBytes)
    } catch let error as SharePipeError {
        guard error.file == name else { fatalError("the error does not name the input: \(error)") }
        return 0
    } catch {
        fatalError("a box reader threw something that is not a SharePipeError: \(error)")
    }
    if let grid = findings.grid { check(grid, fileSize: count) }
    checkTransforms(findings)
    checkGate(bytes, format: format, findings: findings, maxMetadataBytes: maxMetadataBytes)
    // The readers keep no state: the same bytes, the same findings.
    guard let again = try? HEIFBoxReaders.read(bytes, name: name, maxMetadataBytes: maxMetadataBytes),
        again.grid == findings.grid, again.associations == findings.associations,
        again.sampleEntryTypes == findings.sampleEntryTypes, again.itemTypes == findings.itemTypes
    else { fatalError("a second read of the same bytes disagrees") }
    return 0
}

/// The grid the tile route would decode: its tiles in the file and covering the image.
func check(_ grid: HEIFBoxReaders.Grid, fileSize: Int) {
    guard grid.rows >= 1, grid.columns >= 1, grid.tileExtents.count == grid.rows * grid.columns,
        grid.tileParameterSets.count == grid.tileExtents.count
    else { fatalError("grid of \(grid.rows)×\(grid.columns) with \(grid.tileExtents.count) tiles") }
    for extents in grid.tileExtents {
        guard !extents.isEmpty else { fatalError("a tile without data") }
        for extent in extents where extent.offset < 0 || extent.length <= 0 || extent.offset > fileSize - extent.length
        {
            fatalError("tile data at \(extent.offset) (+\(extent.length)) outside a file of \(fileSize) bytes")
        }
    }
    for index in grid.tileParameterSets where !(0..<grid.parameterSetCount).contains(index) {
        fatalError("tile parameter-set index \(index) of \(grid.parameterSetCount)")
    }
    guard grid.width >= 1, grid.height >= 1, grid.tileWidth >= 1, grid.tileHeight >= 1,
        grid.tileWidth * grid.columns >= grid.width, grid.tileHeight * grid.rows >= grid.height,
        grid.tileWidth * (grid.columns - 1) < grid.width, grid.tileHeight * (grid.rows - 1) < grid.height
    else { fatalError("tiles of \(grid.tileWidth)×\(grid.tileHeight) do not cover \(grid.width)×\(grid.height)") }
    let displayed = [grid.displayedWidth, grid.displayedHeight]
    guard displayed == [grid.width, grid.height] || displayed == [grid.height, grid.width] else {
        fatalError("displayed \(displayed) from coded \(grid.width)×\(grid.height)")
    }
    guard [1, 2, 3].contains(grid.chroma), !grid.isSingleImage || grid.tileExtents.count == 1 else {
        fatalError("chroma \(grid.chroma), single image with \(grid.tileExtents.count) tiles")
    }
}

/// The non-essential transform reported agrees with `ipma` as read.
func checkTransforms(_ findings: HEIFBoxReaders.Findings) {
    let offending = findings.associations.filter { association in
        !association.essential && association.index >= 1 && association.index <= findings.propertyTypes.count
            && ["clap", "irot", "imir"].contains(findings.propertyTypes[association.index - 1])
    }
    switch (findings.nonEssentialTransform, offending.first) {
    case (nil, nil): break
    case (let reported?, let first?):
        guard reported.item == first.item, reported.property == findings.propertyTypes[first.index - 1] else {
            fatalError("reported \(reported), ipma's first is item \(first.item) index \(first.index)")
        }
    default:
        let reported = String(describing: findings.nonEssentialTransform)
        fatalError("non-essential transform reported: \(reported); in ipma: \(offending)")
    }
}

/// The checks before any decoder: what they refuse follows from the boxes.
func checkGate(_ bytes: [UInt8], format: ImageFormat, findings: HEIFBoxReaders.Findings, maxMetadataBytes: Int) {
    do {
        try HEIFBoxReaders.gate(bytes, disabled: [.avif], maxMetadataBytes: maxMetadataBytes)
        // Let through: an AVIF never is under --disable avif; an AV1-coded HEIF must not be.
        if format == .avif { fatalError("an AVIF passed --disable avif") }
        if findings.codedImageTypes.contains("av01") || findings.sampleEntryTypes.contains("av01") {
            fatalError("an HEIF with AV1 items or tracks passed --disable avif")
        }
        if findings.nonEssentialTransform != nil { fatalError("a non-essential transform passed the gate") }
    } catch SharePipeError.unsupportedFormat(let file, .disabled, let reason) {
        guard file == "<memory>", reason.contains("--disable avif") else { fatalError("refusal: \(reason)") }
        // Refused: an AVIF, or an HEIF with AV1 (or whose meta could not be read).
        if format == .heif, findings.tableRead, !findings.codedImageTypes.contains("av01"),
            !findings.sampleEntryTypes.contains("av01")
        {
            fatalError("an HEIF without AV1 refused under --disable avif: \(reason)")
        }
    } catch SharePipeError.corrupt(let file, .header, let reason) {
        guard file == "<memory>", reason.contains("not marked essential"), findings.nonEssentialTransform != nil
        else { fatalError("corrupt without a non-essential transform: \(reason)") }
    } catch let error as SharePipeError {
        guard error.file == "<memory>" else { fatalError("the gate's error does not name the input: \(error)") }
    } catch {
        fatalError("the gate threw something that is not a SharePipeError: \(error)")
    }
}

FuzzHarness.main(fuzzHEIFBoxes)
