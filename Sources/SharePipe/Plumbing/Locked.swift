#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value reachable only while its lock is held: the one lock of the library. The value and a
/// `pthread_mutex_t` share one `ManagedBuffer` (the value in its header, the mutex in its tail), so the mutex
/// has a stable address for its whole life (as swift-nio's `NIOLockedValueBox` does) instead of living in a
/// stored property passed by `&`, which Swift does not promise to keep in place. Copies share the value.
struct Locked<Value> {
    private final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    private let storage: Storage

    init(_ value: Value) {
        storage = Storage.create(minimumCapacity: 1) { _ in value } as! Storage
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        }
    }

    /// Runs `body` on the value, holding the lock.
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try storage.withUnsafeMutablePointers { value, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}

extension Locked: @unchecked Sendable where Value: Sendable {}
