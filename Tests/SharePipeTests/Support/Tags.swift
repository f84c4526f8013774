import Testing

extension Tag {
    /// A suite with a test that takes seconds of CPU, not milliseconds: large images, every truncation of a
    /// file, property tests over many seeds, whole-corpus runs. `swift test --skip tag:slow` leaves them out
    /// of a quick run; `scripts/test` runs them.
    @Tag static var slow: Self

    /// A suite with a test that asks an outside tool (exiftool, ImageMagick, gifsicle, ffmpeg, heif-convert,
    /// dwebp, avifenc, jpegtran, strace, objdump, python3 with its packages) to witness an output or make an
    /// input. `scripts/install-deps` installs them; without one such a test fails naming it
    /// (`Witness.Missing`), never passes silently. `swift test --skip tag:witness` runs the rest.
    @Tag static var witness: Self
}
