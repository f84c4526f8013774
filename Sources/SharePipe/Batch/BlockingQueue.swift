import Dispatch

/// A first-in-first-out queue of at most `capacity` elements shared between threads: `push` waits while it
/// is full, `pop` waits while it is empty and returns nil once it is closed and drained. The batch's walk,
/// workers and writer talk through two of these, so the number of files in flight never depends on the
/// number of files in the batch.
final class BlockingQueue<Element>: @unchecked Sendable {
    /// Free places (push waits on it) and queued elements (pop waits on it).
    private let places: DispatchSemaphore
    private let queued = DispatchSemaphore(value: 0)
    private let ring: Locked<Ring>

    /// The elements in a ring of `capacity` places: `count` of them from `head` on.
    private struct Ring {
        var elements: [Element?]
        var head = 0
        var count = 0
        var closed = false
    }

    init(capacity: Int) {
        precondition(capacity > 0)
        ring = Locked(Ring(elements: Array(repeating: nil, count: capacity)))
        // Made at zero and raised, not made at `capacity`: libdispatch traps when a semaphore is freed below
        // its initial value, which a queue abandoned with elements in it would be.
        places = DispatchSemaphore(value: 0)
        for _ in 0..<capacity { places.signal() }
    }

    /// Adds `element`, waiting for a free place. Call only before `close`.
    func push(_ element: Element) {
        places.wait()
        ring.withLock { ring in
            precondition(!ring.closed, "push after close")
            ring.elements[(ring.head + ring.count) % ring.elements.count] = element
            ring.count += 1
        }
        queued.signal()
    }

    /// The oldest element, waiting for one; nil when the queue is closed and empty.
    func pop() -> Element? {
        queued.wait()
        let element: Element? = ring.withLock { ring in
            guard ring.count > 0 else { return nil }  // closed and drained
            let element = ring.elements[ring.head]
            ring.elements[ring.head] = nil
            ring.head = (ring.head + 1) % ring.elements.count
            ring.count -= 1
            return element
        }
        if element == nil {
            queued.signal()  // wake the next waiting pop: it finds the queue closed too
        } else {
            places.signal()
        }
        return element
    }

    /// No more elements will come: waiting `pop`s return what is left, then nil.
    func close() {
        ring.withLock { $0.closed = true }
        queued.signal()
    }
}
