import Testing
@testable import SharePipe

/// `withUnsafeBufferPointers`: every array lent at once, typed back in order, the written one changed in place.
@Suite struct UnsafeBuffersTests {
    @Test func lendsArraysOfDifferentTypesAtOnce() {
        let bytes: [UInt8] = [1, 2, 3], floats: [Float] = [0.5, 1.5], flags = [true, false, true, true],
            empty: [Int] = []
        let seen = withUnsafeBufferPointers(bytes, floats, flags, empty) { b, f, d, e in
            (Array(b), Array(f), Array(d), e.count)
        }
        #expect(seen.0 == bytes && seen.1 == floats && seen.2 == flags && seen.3 == 0)
    }

    @Test func writesTheWrittenArrayInPlace() {
        let source: [UInt8] = [10, 20, 30, 40]
        var target = [UInt16](repeating: 0, count: 4)
        let sum = withUnsafeBufferPointers(source, writing: &target) { out, input in
            for i in input.indices { out[i] = UInt16(input[i]) * 2 }
            return input.reduce(0) { $0 + Int($1) }
        }
        #expect(target == [20, 40, 60, 80] && sum == 100)
    }

    @Test func pinsEveryArrayOfAList() {
        let payloads: [[UInt8]] = [[1], [], [2, 3, 4], [5, 6]]
        let lengths = withUnsafeBufferPointers(ofEach: payloads) { buffers in buffers.map(\.count) }
        let copies = withUnsafeBufferPointers(ofEach: payloads) { buffers in buffers.map { Array($0) } }
        #expect(lengths == [1, 0, 3, 2] && copies == payloads)
    }

    @Test func rethrowsTheBodysError() {
        struct Stop: Error, Equatable {}
        #expect(throws: Stop()) {
            try withUnsafeBufferPointers([1, 2], [3.0]) { _, _ in throw Stop() }
        }
    }
}
