/// A width-to-height ratio to crop the output to (`PrepareOptions.cropTo`), as `W:H` with whole numbers:
/// `1:1`, `4:5` (Instagram's square and portrait feed ratios), `191:100` (its landscape 1.91:1).
public struct AspectRatio: Sendable, Hashable, Codable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    /// The largest term accepted, and the most elongated ratio (either way).
    public static let largestTerm = 10_000
    public static let mostElongated = 10

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `text` read as `W:H`, two positive decimal integers; nil for anything else (the ratio's bounds are the
    /// option's check, `invalidity`).
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let width = Int(parts[0]), let height = Int(parts[1])
        else { return nil }
        self.init(width: width, height: height)
    }

    /// `W:H`.
    public var description: String { "\(width):\(height)" }

    /// Read from text `W:H` (a profile file's `"cropTo": "4:5"`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let ratio = AspectRatio(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected a ratio W:H of whole numbers (1:1, 4:5), got \"\(text)\"")
        }
        self = ratio
    }

    /// Written as text `W:H`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Why the ratio cannot be cropped to, or nil: both terms 1...`largestTerm`, neither more than
    /// `mostElongated` times the other.
    var invalidity: String? {
        guard (1...Self.largestTerm).contains(width), (1...Self.largestTerm).contains(height) else {
            return "W:H with whole numbers from 1 to \(Self.largestTerm)"
        }
        guard width <= height * Self.mostElongated, height <= width * Self.mostElongated else {
            return "a ratio from 1:\(Self.mostElongated) to \(Self.mostElongated):1"
        }
        return nil
    }

    /// In lowest terms (`1920:1080` → `16:9`).
    var reduced: AspectRatio {
        var a = width, b = height
        while b != 0 { (a, b) = (b, a % b) }
        return AspectRatio(width: width / max(a, 1), height: height / max(a, 1))
    }

    /// The largest size of this ratio that fits in `box`: exactly the ratio (a whole multiple of its lowest
    /// terms) when that loses less than 1 % of the edge, otherwise the ratio to within a pixel. At least 1 × 1.
    func largestSize(in box: PixelSize) -> PixelSize {
        let ratio = reduced
        let exact = min(box.width / ratio.width, box.height / ratio.height)
        let rounded: PixelSize
        if box.width * ratio.height <= box.height * ratio.width {
            rounded = PixelSize(
                width: box.width,
                height: max(1, min(box.height, Int((Double(box.width * ratio.height) / Double(ratio.width)).rounded())))
            )
        } else {
            rounded = PixelSize(
                width: max(1, min(box.width, Int((Double(box.height * ratio.width) / Double(ratio.height)).rounded()))),
                height: box.height)
        }
        if exact >= 1 && exact * ratio.width * 100 >= rounded.width * 99
            && exact * ratio.height * 100 >= rounded.height * 99
        {
            return PixelSize(width: exact * ratio.width, height: exact * ratio.height)
        }
        return rounded
    }
}

/// The crop of a still to `PrepareOptions.cropTo`, placed around the focal point of the whole picture: the
/// largest window of the ratio inside the displayed image, centred on the focal point and moved back inside
/// the picture where it would cross an edge (so a subject near an edge is kept, off-centre).
///
/// The geometry is planned from the header (`PreparePlan.crop`): the output size is the window's, capped. The
/// window's position needs the pixels: the still route renders the whole picture at the scale that gives the
/// window its output size (so the output keeps every pixel the caps allow), estimates the focal point on that
/// render's placeholder thumbnail (oriented, as displayed), and cuts the window out of it (`StillRenderer`).
struct CropPlan: Sendable, Equatable {
    var ratio: AspectRatio
    /// The displayed image.
    var image: PixelSize
    /// The largest window of `ratio` inside `image`.
    var window: PixelSize

    init(ratio: AspectRatio, image: PixelSize) {
        self.ratio = ratio
        self.image = image
        self.window = ratio.largestSize(in: image)
    }

    /// Whether the window is the whole image (the ratio is the image's own): nothing to crop.
    var keepsWholeImage: Bool { window == image }

    /// The whole image's size for an output of `output` (displayed): scaled by the output's ratio to the window,
    /// rounded so the window lands on `output` (never under it on either edge).
    func renderSize(forOutput output: PixelSize) -> PixelSize {
        let scaleX = Double(output.width) / Double(window.width)
        let scaleY = Double(output.height) / Double(window.height)
        return PixelSize(
            width: max(output.width, min(image.width, Int((Double(image.width) * scaleX).rounded()))),
            height: max(output.height, min(image.height, Int((Double(image.height) * scaleY).rounded()))))
    }

    /// The output size for `size` (displayed) made exactly the ratio when it is within a pixel of it and a whole
    /// multiple fits, so a smaller size the fitting tries keeps the aspect `W:H` states.
    func exactOutput(near size: PixelSize) -> PixelSize {
        ratio.largestSize(in: size)
    }

    /// The window's top left corner in a render of `render` (the whole image, displayed) for an output of
    /// `output`: centred on `focus`, clamped inside the render.
    static func origin(of output: PixelSize, in render: PixelSize, around focus: FocalPoint) -> (x: Int, y: Int) {
        let fractions = focus.fractions
        let centreX = fractions.x * Double(render.width), centreY = fractions.y * Double(render.height)
        let x = Int((centreX - Double(output.width) / 2).rounded())
        let y = Int((centreY - Double(output.height) / 2).rounded())
        return (max(0, min(render.width - output.width, x)), max(0, min(render.height - output.height, y)))
    }

    /// `focus` (of the whole render) as the focal point of the window cut at `origin`, `output` wide and high.
    static func focus(_ focus: FocalPoint, in render: PixelSize, window origin: (x: Int, y: Int), output: PixelSize)
        -> FocalPoint
    {
        let fractions = focus.fractions
        let x = (fractions.x * Double(render.width) - Double(origin.x)) / Double(output.width)
        let y = (fractions.y * Double(render.height) - Double(origin.y)) / Double(output.height)
        return FocalPoint(fractionX: x, fractionY: y)
    }
}

extension Bitmap {
    /// The `size` region whose top left corner is at `x`, `y` (inside the bitmap), as a new bitmap.
    func cropped(x: Int, y: Int, size: PixelSize) -> Bitmap {
        precondition(
            x >= 0 && y >= 0 && x + size.width <= self.size.width && y + size.height <= self.size.height,
            "crop window outside the bitmap")
        let channels = layout.channels
        let rowBytes = size.width * channels, sourceRow = self.size.width * channels
        var out = [UInt8](repeating: 0, count: size.height * rowBytes)
        pixels.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                for row in 0..<size.height {
                    let from = (y + row) * sourceRow + x * channels
                    UnsafeMutableRawPointer(target.baseAddress! + row * rowBytes).copyMemory(
                        from: source.baseAddress! + from, byteCount: rowBytes)
                }
            }
        }
        return Bitmap(size: size, layout: layout, pixels: out)
    }
}
