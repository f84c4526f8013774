/// The one way to hold several arrays' storage at fixed addresses at once: for a C call that takes several
/// buffers, or a raw loop over several arrays, without a pyramid of `withUnsafe…BufferPointer` closures.
/// Each array is pinned (by its own `withUnsafeBufferPointer`) for the whole of `body`, and no pointer may
/// escape `body`.
///
/// ```swift
/// let status = withUnsafeBufferPointers(pixels, palette, icc) { pixels, palette, icc in
///     sp_png_encode(pixels.baseAddress, …, palette.baseAddress, …, icc.baseAddress, icc.count, …)
/// }
/// ```
///
/// Lending goes through a list of small existentials (one allocation) and a few indirect calls per array. That is nothing per C call, per frame or per picture (the GIF animation
/// encoder's per-frame loops run 0.2 % fewer instructions with it), but the resampler's per-row functions
/// keep their own nesting (see `LanczosResampler.emitOutputRow`).
func withUnsafeBufferPointers<each Element, Result>(
    _ arrays: repeat [each Element],
    body: (repeat UnsafeBufferPointer<each Element>) throws -> Result
) rethrows -> Result {
    try withLentBuffers(lenders(repeat each arrays)) { raw in
        var next = TypedBuffers(raw: raw)
        return try body(repeat next.take((each Element).self))
    }
}

/// `withUnsafeBufferPointers(_:body:)` with one array also written: `body` receives the written array
/// first, then the read ones.
func withUnsafeBufferPointers<each Element, Written, Result>(
    _ arrays: repeat [each Element],
    writing written: inout [Written],
    body: (UnsafeMutableBufferPointer<Written>, repeat UnsafeBufferPointer<each Element>) throws -> Result
) rethrows -> Result {
    // The arrays go into the closures as a list: a value pack captured by a closure is miscompiled
    // (Swift 6.3: its elements are read as null).
    let read = lenders(repeat each arrays)
    return try written.withUnsafeMutableBufferPointer { output in
        try withLentBuffers(read) { raw in
            var next = TypedBuffers(raw: raw)
            return try body(output, repeat next.take((each Element).self))
        }
    }
}

/// Every array of a list pinned at once (the payloads of a C call's chunk or marker list).
func withUnsafeBufferPointers<Element, Result>(
    ofEach arrays: [[Element]], _ body: ([UnsafeBufferPointer<Element>]) throws -> Result
) rethrows -> Result {
    try withLentBuffers(arrays) { raw in
        try body(raw.map { $0.assumingMemoryBound(to: Element.self) })
    }
}

/// The arrays as a list of lenders (one small existential each: an array fits in it without a box).
private func lenders<each Element>(_ arrays: repeat [each Element]) -> [any BufferLender] {
    var lenders: [any BufferLender] = []
    for array in repeat each arrays { lenders.append(array) }
    return lenders
}

/// Every lender's storage as a raw buffer, all pinned at once; the pointers are kept in stack space.
private func withLentBuffers<Result>(
    _ lenders: [any BufferLender], _ body: (UnsafeMutableBufferPointer<UnsafeRawBufferPointer>) throws -> Result
) rethrows -> Result {
    try withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer.self, capacity: lenders.count) { slots in
        try lend(lenders, from: 0, into: slots, body)
    }
}

/// Pins lender `index` and, inside it, the ones after it, writing each pointer into `slots`; then calls `body`.
private func lend<Result>(
    _ lenders: [any BufferLender], from index: Int, into slots: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>,
    _ body: (UnsafeMutableBufferPointer<UnsafeRawBufferPointer>) throws -> Result
) rethrows -> Result {
    guard index < lenders.count else { return try body(slots) }
    return try lenders[index].lend { buffer in
        slots[index] = buffer
        return try lend(lenders, from: index + 1, into: slots, body)
    }
}

/// The lent buffers, typed back one by one in the order they were lent.
private struct TypedBuffers {
    let raw: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>
    var index = 0

    mutating func take<Value>(_: Value.Type) -> UnsafeBufferPointer<Value> {
        defer { index += 1 }
        return raw[index].assumingMemoryBound(to: Value.self)
    }
}

/// An array lending its storage as raw bytes.
private protocol BufferLender {
    func lend<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
}

extension Array: BufferLender {
    fileprivate func lend<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withUnsafeBytes(body)
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes as `count / stride` values of `Value` (the storage of a `[Value]`).
    fileprivate func assumingMemoryBound<Value>(to _: Value.Type) -> UnsafeBufferPointer<Value> {
        UnsafeBufferPointer(
            start: baseAddress?.assumingMemoryBound(to: Value.self),
            count: count / MemoryLayout<Value>.stride)
    }
}
