#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one lock: a `pthread_mutex_t` in the tail of a `ManagedBuffer`, so it has a stable address for its
/// whole life (as swift-nio's `NIOLock` does) instead of living in a stored property passed by `&`, which
/// Swift does not promise to keep in place.
struct Mutex: @unchecked Sendable {
    private final class Storage: ManagedBuffer<Void, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    private let storage: Storage

    init() {
        storage = Storage.create(minimumCapacity: 1) { _ in } as! Storage
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        }
    }

    /// Runs `body` holding the lock.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        try storage.withUnsafeMutablePointerToElements { mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body()
        }
    }
}
