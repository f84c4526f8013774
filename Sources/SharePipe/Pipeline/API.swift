/// Prepares one image for posting: strips metadata, applies the orientation, downscales and encodes it
/// under the byte limit. Opens `source` afresh for every step and keeps no decoded image between steps.
///
/// ```swift
/// let result = try SharePipe.prepare(.file(path: "IMG_0001.jpg"), options: PrepareOptions(maxBytes: 5_000_000))
/// ```
///
/// - Throws: `SharePipeError`; `invalidOptions` (naming the option) before anything is read when
///   `options` cannot work.
public func prepare(_ source: ImageSource, options: PrepareOptions = PrepareOptions()) throws -> PreparedImage {
    try Pipeline.prepare(source, options: options.checked())
}

/// The async form: runs off the caller's executor and honours Task cancellation between steps and
/// between fitting attempts (a cancelled job throws `SharePipeError.cancelled` and produces nothing).
public func prepare(_ source: ImageSource, options: PrepareOptions = PrepareOptions()) async throws -> PreparedImage {
    if Task.isCancelled { throw SharePipeError.cancelled(file: source.displayName) }
    return try Pipeline.prepare(source, options: options.checked()) {
        if Task.isCancelled { throw SharePipeError.cancelled(file: source.displayName) }
    }
}

/// Reads only the header of an image: format, size, orientation, metadata present. An input in a family
/// `limits.disabledFormats` turns off is refused (`unsupportedFormat`) before any decoder library reads it.
public func inspect(_ source: ImageSource, limits: ImageLimits = ImageLimits()) throws -> ImageInfo {
    try Pipeline.probe(source, limits: limits)
}
