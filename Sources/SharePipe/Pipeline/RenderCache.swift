/// The `cpuFirst` strategy's memory: one decoded, resized bitmap (stored orientation) reused for every
/// smaller size the fitting search or a later service asks for, instead of decoding the source again.
final class RenderCache: @unchecked Sendable {
    private let kept = Locked<Bitmap?>(nil)

    /// The kept bitmap if it is at least `size` on both edges.
    func bitmap(covering size: PixelSize) -> Bitmap? {
        kept.withLock { bitmap in
            guard let bitmap, bitmap.width >= size.width, bitmap.height >= size.height else { return nil }
            return bitmap
        }
    }

    /// Keeps `candidate` if it is larger than what is kept.
    func keep(_ candidate: Bitmap) {
        kept.withLock { bitmap in
            if bitmap == nil || candidate.size.area > bitmap!.size.area { bitmap = candidate }
        }
    }
}
