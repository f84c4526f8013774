import CSharePipe

/// CMYK to sRGB through the image's own embedded CMYK profile, with Little CMS (perceptual intent), as
/// browsers and ImageMagick convert a tagged CMYK JPEG. Untagged CMYK keeps the naive complement product
/// (`CMYKConversion`), which is also what browsers show for it: guessing a press profile (SWOP, FOGRA)
/// would shift colours relative to every viewer the user compares with.
final class CMYKProfileTransform {
    private let handle: OpaquePointer

    /// A transform for `profile`; throws with Little CMS's reason when the profile is not a usable CMYK
    /// input profile. `inverted`: samples are stored as 255 − ink (Adobe APP14).
    init(profile: [UInt8], inverted: Bool, file: String) throws {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let status = profile.withUnsafeBufferPointer { buffer in
            sp_color_cmyk_to_srgb_create(buffer.baseAddress, buffer.count, inverted ? 1 : 0, &handle, &message)
        }
        // Little CMS refusing the profile, or a profile too short to be one: the file's profile is damaged.
        if status == SP_ERR_LIBRARY || status == SP_ERR_ARGUMENT {
            throw SharePipeError.corrupt(file: file, phase: .header, reason: shimText(message))
        }
        try checkShim(status, message, file: file, phase: .header)
        self.handle = handle!
    }

    deinit { sp_color_transform_free(handle) }

    /// Converts `pixels` CMYK pixels to RGB.
    func convert(_ cmyk: UnsafeBufferPointer<UInt8>, into rgb: UnsafeMutableBufferPointer<UInt8>, pixels: Int) {
        precondition(cmyk.count >= pixels * 4 && rgb.count >= pixels * 3, "row buffers too small")
        sp_color_transform_row(handle, cmyk.baseAddress, rgb.baseAddress, pixels)
    }

    /// The transform for a CMYK image's embedded profile, or nil (with the reason as a warning when a
    /// profile was there but unusable) to fall back to the naive conversion.
    static func forImage(_ info: ImageInfo, file: String) -> (transform: CMYKProfileTransform?, warning: String?) {
        var profile: [UInt8]?
        for case .icc(let bytes) in info.metadata { profile = bytes; break }
        guard let profile else { return (nil, nil) }
        guard ICCProfile.colorSpace(profile) == "CMYK" else {
            return (nil, "the embedded ICC profile is not a CMYK profile; CMYK converted without colour management")
        }
        do {
            return (try CMYKProfileTransform(profile: profile, inverted: info.jpegAdobeInverted, file: file), nil)
        } catch let error as SharePipeError {
            let reason: String
            switch error {
            // lcms2 refused it, or is missing.
            case .corrupt(_, _, let text), .unsupportedFormat(_, _, let text): reason = text
            default: reason = error.description
            }
            return (nil, "the embedded CMYK profile is unusable (\(reason)); CMYK converted without colour management")
        } catch {
            return (nil, "the embedded CMYK profile is unusable; CMYK converted without colour management")
        }
    }
}
