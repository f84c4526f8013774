import Dispatch
import FuzzSupport

/// libFuzzer's entry: the server's `multipart/form-data` reading (`Multipart.swift`, the server's own file, linked
/// here: it depends on nothing, so neither SwiftNIO nor Hummingbird is built) on one input:
///
///     <Content-Type value>\n<chunking byte><body>
///
/// The Content-Type's boundary (`Multipart.boundary(ofContentType:)`, else `fuzzboundary`) delimits the body,
/// which arrives in chunks whose sizes the chunking byte seeds (1 to 64 bytes, so delimiters, CRLFs and header
/// ends fall across chunks), and the `file` part is read through `Multipart.FormDataPart`. Besides crashes, hangs
/// and leaks, any of these is a failure:
/// - an error that is not `Multipart.Broken`;
/// - the part read in chunks differing from the part read from the body in one piece (only the limits on a
///   boundary line's and a part's headers' length may depend on the chunking);
/// - a part's bytes that are not found in the body just before a delimiter (`\r\n--boundary`), or that contain one.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMultipart(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    guard let newline = input.prefix(512).firstIndex(of: 10), newline + 1 < input.count else { return -1 }
    let contentType = String(decoding: input[..<newline], as: UTF8.self)
    _ = Multipart.isFormData(contentType)
    let boundary = Multipart.boundary(ofContentType: contentType) ?? "fuzzboundary"
    guard (1...70).contains(boundary.utf8.count) else { fatalError("boundary of \(boundary.utf8.count) bytes") }
    let seed = input[newline + 1]
    let body = Array(input[(newline + 2)...])

    let whole = readFilePart(chunks: [body], boundary: boundary)
    let chunked = readFilePart(chunks: split(body, seed: seed), boundary: boundary)
    switch (whole, chunked) {
    case (.success(let one), .success(let many)):
        guard one == many else { fatalError("the part read in chunks differs: \(one.count) vs \(many.count) bytes") }
        check(part: one, in: body, boundary: boundary)
    case (.failure, .failure):
        break
    case (.failure(let error), .success), (.success, .failure(let error)):
        // Only the length limits may depend on how the body arrives.
        guard error.description.contains("too long") || error.description.contains("longer than") else {
            fatalError("one piece and chunks disagree: \(error)")
        }
    }
    return 0
}

/// The body in chunks of 1 to 64 bytes, sizes from a generator seeded by `seed`.
func split(_ body: [UInt8], seed: UInt8) -> [[UInt8]] {
    var chunks: [[UInt8]] = [], position = 0, state = UInt32(seed) &* 2_654_435_761 | 1
    while position < body.count {
        state = state &* 1_103_515_245 &+ 12345
        let size = min(body.count - position, 1 + Int(state >> 16) % 64)
        chunks.append(Array(body[position..<(position + size)]))
        position += size
    }
    return chunks
}

/// The `file` part of a body arriving as `chunks`, read through `Multipart.FormDataPart`.
func readFilePart(chunks: [[UInt8]], boundary: String) -> Result<[UInt8], Multipart.Broken> {
    /// Written by the task, read after it signalled.
    final class Outcome: @unchecked Sendable {
        var result: Result<[UInt8], Multipart.Broken>?
    }
    let done = DispatchSemaphore(value: 0)
    let outcome = Outcome()
    Task {
        var part: [UInt8] = []
        do {
            let reader = Multipart.FormDataPart(base: Chunks(chunks: chunks), boundary: boundary, field: "file")
            for try await piece in reader { part += piece }
            outcome.result = .success(part)
        } catch let broken as Multipart.Broken {
            outcome.result = .failure(broken)
        } catch {
            fatalError("the multipart reader threw something that is not Multipart.Broken: \(error)")
        }
        done.signal()
    }
    done.wait()
    return outcome.result!
}

/// A part read whole lies in the body right before a delimiter, and holds none.
func check(part: [UInt8], in body: [UInt8], boundary: String) {
    let delimiter = Array("\r\n--\(boundary)".utf8)
    let framed = [13, 10] + body
    if Multipart.FormDataPart<Chunks>.Iterator.find(delimiter, in: part) != nil {
        fatalError("the part holds a delimiter")
    }
    let wanted = part + delimiter
    guard Multipart.FormDataPart<Chunks>.Iterator.find(wanted, in: framed) != nil else {
        fatalError("the part (\(part.count) bytes) is not in the body before a delimiter")
    }
}

/// Chunks as an async sequence that never waits.
struct Chunks: AsyncSequence {
    typealias Element = [UInt8]
    let chunks: [[UInt8]]

    func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks) }

    struct Iterator: AsyncIteratorProtocol {
        var chunks: [[UInt8]]
        var index = 0
        mutating func next() async -> [UInt8]? {
            guard index < chunks.count else { return nil }
            defer { index += 1 }
            return chunks[index]
        }
    }
}

FuzzHarness.main(fuzzMultipart)
