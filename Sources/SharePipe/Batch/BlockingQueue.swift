import Dispatch

/// A first-in-first-out queue of at most `capacity` elements shared between threads: `push` waits while it
/// is full, `pop` waits while it is empty and returns nil once it is closed and drained. The batch's walk,
/// workers and writer talk through two of these, so the number of files in flight never depends on the
/// number of files in the batch.
final class BlockingQueue<Element>: @unchecked Sendable {
    private let lock = Mutex()
    /// Free places (push waits on it) and queued elements (pop waits on it).
    private let places: DispatchSemaphore
    private let queued = DispatchSemaphore(value: 0)
    private var elements: [Element?]
    private var head = 0
    private var count = 0
    private var closed = false

    init(capacity: Int) {
        precondition(capacity > 0)
        elements = Array(repeating: nil, count: capacity)
        // Made at zero and raised, not made at `capacity`: libdispatch traps when a semaphore is freed below
        // its initial value, which a queue abandoned with elements in it would be.
        places = DispatchSemaphore(value: 0)
        for _ in 0..<capacity { places.signal() }
    }

    /// Adds `element`, waiting for a free place. Call only before `close`.
    func push(_ element: Element) {
        places.wait()
        lock.locked {
            precondition(!closed, "push after close")
            elements[(head + count) % elements.count] = element
            count += 1
        }
        queued.signal()
    }

    /// The oldest element, waiting for one; nil when the queue is closed and empty.
    func pop() -> Element? {
        queued.wait()
        let element: Element? = lock.locked {
            guard count > 0 else { return nil }   // closed and drained
            let element = elements[head]
            elements[head] = nil
            head = (head + 1) % elements.count
            count -= 1
            return element
        }
        if element == nil {
            queued.signal()   // wake the next waiting pop: it finds the queue closed too
        } else {
            places.signal()
        }
        return element
    }

    /// No more elements will come: waiting `pop`s return what is left, then nil.
    func close() {
        lock.locked { closed = true }
        queued.signal()
    }
}

/// A value set on one thread and read on another after a `DispatchGroup` wait.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = Mutex()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.locked { stored } }
        set { lock.locked { stored = newValue } }
    }
}
