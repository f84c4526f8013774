/// What a `MemoryBudget` does with a request larger than its whole capacity.
public enum OversizedJobPolicy: String, Sendable, Codable, CaseIterable {
    /// Wait until nothing else holds memory, then run alone; nothing else is admitted until it ends.
    /// Slow under load but never a deadlock, and never a refusal of a photo the limits accept. The default.
    case runAlone
    /// Refuse it at once with `SharePipeError.tooLarge`, before any pixel is decoded.
    case refuse
}

/// Admission control by memory: callers reserve an estimated number of bytes before they start and
/// release them when they end; a request waits until it fits.
///
/// - Strictly first in, first out: only the oldest waiter can be admitted, so a large job is never
///   starved by a stream of small ones (a small one waits behind it even when it would fit).
/// - A request larger than the capacity follows `oversizedJobs`: it runs alone, or is refused.
/// - `maxConcurrentJobs` caps the reservations that hold a job slot (CPU work); reservations without one
///   (receiving an upload) count only bytes.
/// - A waiter whose task is cancelled leaves the queue and throws `CancellationError`.
/// - The queue is bounded: past `maxWaitingRequests` waiters, or after waiting `maxWait`, a request is turned
///   away with `SharePipeError.overloaded` (a server answers 503 and asks the client to retry later).
///
/// ```swift
/// let budget = MemoryBudget(capacity: 512 << 20)
/// let value = try await budget.withReservation(estimate.totalBytes) { _ in try await work() }
/// ```
public actor MemoryBudget {
    /// Bytes that may be reserved at once.
    public nonisolated let capacity: Int
    /// Reservations holding a job slot that may exist at once.
    public nonisolated let maxConcurrentJobs: Int
    /// What happens to a request larger than `capacity`.
    public nonisolated let oversizedJobs: OversizedJobPolicy
    /// Requests that may wait in the queue at once; one more is refused with `overloaded(.queueFull)`.
    public nonisolated let maxWaitingRequests: Int
    /// How long a request may wait in the queue before it is refused with `overloaded(.waitTimedOut)`;
    /// nil waits as long as it takes.
    public nonisolated let maxWait: Duration?

    /// A granted reservation: give it back with `release(_:)`.
    public struct Reservation: Sendable, Hashable {
        /// Identifies the reservation within its budget.
        public let id: UInt64
        /// Bytes reserved.
        public let bytes: Int
        /// Whether it holds one of the `maxConcurrentJobs` slots.
        public let holdsJobSlot: Bool
    }

    /// A snapshot of the budget's state, for tests, health endpoints and logs.
    public struct Usage: Sendable, Equatable {
        /// Bytes reserved now.
        public var reservedBytes: Int
        /// Reservations holding a job slot now.
        public var runningJobs: Int
        /// Requests waiting in the queue.
        public var waitingRequests: Int
        /// Most bytes reserved at once since the budget was made.
        public var peakReservedBytes: Int
        /// Most job slots held at once since the budget was made.
        public var peakRunningJobs: Int
    }

    private struct Waiter {
        let reservation: Reservation
        let name: String
        let continuation: CheckedContinuation<Reservation, any Error>
        /// Refuses the waiter when `maxWait` has passed; cancelled when it leaves the queue.
        var timer: Task<Void, Never>?
    }

    private var reservedBytes = 0
    private var runningJobs = 0
    private var peakReservedBytes = 0
    private var peakRunningJobs = 0
    private var queue: [Waiter] = []
    private var lastID: UInt64 = 0

    /// A budget of `capacity` bytes.
    ///
    /// - Parameters:
    ///   - capacity: bytes that may be reserved at once (at least 1).
    ///   - maxConcurrentJobs: job slots (at least 1); `Int.max` means memory alone decides.
    ///   - oversizedJobs: what to do with a request larger than `capacity`.
    ///   - maxWaitingRequests: requests that may wait at once (0: none may wait; default: no bound).
    ///   - maxWait: how long a request may wait (nil: no limit; otherwise positive).
    public init(
        capacity: Int, maxConcurrentJobs: Int = .max, oversizedJobs: OversizedJobPolicy = .runAlone,
        maxWaitingRequests: Int = .max, maxWait: Duration? = nil
    ) {
        precondition(capacity >= 1, "a memory budget needs a positive capacity")
        precondition(maxConcurrentJobs >= 1, "a memory budget needs at least one job slot")
        precondition(maxWaitingRequests >= 0, "a memory budget's queue bound cannot be negative")
        precondition(maxWait.map { $0 > .zero } ?? true, "a memory budget's wait limit must be positive")
        self.capacity = capacity
        self.maxConcurrentJobs = maxConcurrentJobs
        self.oversizedJobs = oversizedJobs
        self.maxWaitingRequests = maxWaitingRequests
        self.maxWait = maxWait
    }

    /// The current state.
    public var usage: Usage {
        Usage(
            reservedBytes: reservedBytes, runningJobs: runningJobs, waitingRequests: queue.count,
            peakReservedBytes: peakReservedBytes, peakRunningJobs: peakRunningJobs)
    }

    /// Reserves `bytes`, waiting in line until they fit.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while waiting; `SharePipeError.tooLarge`
    ///   when `bytes` exceeds the capacity and `oversizedJobs` is `.refuse`; `SharePipeError.overloaded`
    ///   when it would have to wait behind `maxWaitingRequests` others, or waited `maxWait` in vain.
    public func reserve(_ bytes: Int, holdingJobSlot: Bool = true, for name: String = "<job>") async throws
        -> Reservation
    {
        try Task.checkCancellation()
        if bytes > capacity && oversizedJobs == .refuse {
            throw SharePipeError.tooLarge(
                file: name, exceeded: ExceededLimit(.memoryBudget, found: bytes, limit: capacity))
        }
        let reservation = makeReservation(bytes, holdingJobSlot: holdingJobSlot)
        if queue.isEmpty && fits(reservation, releasing: nil) {
            admit(reservation)
            return reservation
        }
        if queue.count >= maxWaitingRequests {
            throw SharePipeError.overloaded(file: name, reason: .queueFull(waiting: queue.count))
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                var waiter = Waiter(reservation: reservation, name: name, continuation: continuation)
                if let maxWait {
                    waiter.timer = Task { [weak self] in
                        guard (try? await Task.sleep(for: maxWait)) != nil else { return }
                        await self?.expire(reservation.id, after: maxWait)
                    }
                }
                queue.append(waiter)
            }
        } onCancel: {
            Task { await self.withdraw(reservation.id) }
        }
    }

    /// Reserves `bytes` only if that is possible at once without passing anyone in the queue.
    public func reserveWithoutWaiting(_ bytes: Int, holdingJobSlot: Bool = true) -> Reservation? {
        exchange(nil, for: bytes, holdingJobSlot: holdingJobSlot)
    }

    /// Replaces `held` by a reservation of `bytes` if that is possible at once without passing anyone in the
    /// queue (the bytes `held` frees count as available). Returns nil, and keeps `held`, otherwise.
    public func exchange(_ held: Reservation?, for bytes: Int, holdingJobSlot: Bool = true) -> Reservation? {
        if bytes > capacity && oversizedJobs == .refuse { return nil }
        let reservation = makeReservation(bytes, holdingJobSlot: holdingJobSlot)
        guard queue.isEmpty, fits(reservation, releasing: held) else { return nil }
        if let held { give(back: held) }
        admit(reservation)
        return reservation
    }

    /// Gives a reservation back and admits the waiters that now fit, oldest first.
    public func release(_ reservation: Reservation) {
        give(back: reservation)
        admitWaiters()
    }

    /// Reserves `bytes` for the duration of `body`, and releases them however it ends.
    public nonisolated func withReservation<T>(
        _ bytes: Int, holdingJobSlot: Bool = true, for name: String = "<job>",
        _ body: (Reservation) async throws -> T
    ) async throws -> T {
        let reservation = try await reserve(bytes, holdingJobSlot: holdingJobSlot, for: name)
        do {
            let value = try await body(reservation)
            await release(reservation)
            return value
        } catch {
            await release(reservation)
            throw error
        }
    }

    // MARK: - Private

    private func makeReservation(_ bytes: Int, holdingJobSlot: Bool) -> Reservation {
        lastID += 1
        return Reservation(id: lastID, bytes: max(0, bytes), holdsJobSlot: holdingJobSlot)
    }

    /// Whether `reservation` can be admitted now, counting `held` as already given back.
    private func fits(_ reservation: Reservation, releasing held: Reservation?) -> Bool {
        let reserved = reservedBytes - (held?.bytes ?? 0)
        let running = runningJobs - (held?.holdsJobSlot == true ? 1 : 0)
        if reservation.holdsJobSlot && running >= maxConcurrentJobs { return false }
        if reservation.bytes > capacity {
            // Oversized: alone, once nothing else holds memory or a slot.
            return reserved == 0 && running == 0
        }
        return reserved + reservation.bytes <= capacity
    }

    private func admit(_ reservation: Reservation) {
        reservedBytes += reservation.bytes
        if reservation.holdsJobSlot { runningJobs += 1 }
        peakReservedBytes = max(peakReservedBytes, reservedBytes)
        peakRunningJobs = max(peakRunningJobs, runningJobs)
    }

    private func give(back reservation: Reservation) {
        reservedBytes -= reservation.bytes
        if reservation.holdsJobSlot { runningJobs -= 1 }
        precondition(reservedBytes >= 0 && runningJobs >= 0, "a reservation was released twice")
    }

    private func admitWaiters() {
        while let head = queue.first, fits(head.reservation, releasing: nil) {
            queue.removeFirst()
            head.timer?.cancel()
            admit(head.reservation)
            head.continuation.resume(returning: head.reservation)
        }
    }

    /// Takes a cancelled waiter out of the queue (a no-op when it was already admitted: its owner sees the
    /// cancellation at its next checkpoint and releases the reservation).
    private func withdraw(_ id: UInt64) {
        guard let index = queue.firstIndex(where: { $0.reservation.id == id }) else { return }
        let waiter = queue.remove(at: index)
        waiter.timer?.cancel()
        waiter.continuation.resume(throwing: CancellationError())
        // The head may have been the one blocking the others.
        admitWaiters()
    }

    /// Refuses a waiter that waited `maxWait` (a no-op when it was admitted or withdrawn meanwhile).
    private func expire(_ id: UInt64, after wait: Duration) {
        guard let index = queue.firstIndex(where: { $0.reservation.id == id }) else { return }
        let waiter = queue.remove(at: index)
        waiter.continuation.resume(
            throwing: SharePipeError.overloaded(file: waiter.name, reason: .waitTimedOut(after: wait)))
        admitWaiters()
    }
}

/// Why a busy `MemoryBudget` turned a request away: the payload of `SharePipeError.overloaded`.
public enum OverloadReason: Sendable, Equatable, CustomStringConvertible {
    /// `maxWaitingRequests` requests (`waiting`) were already waiting for memory.
    case queueFull(waiting: Int)
    /// The request waited `maxWait` for memory without being admitted.
    case waitTimedOut(after: Duration)

    /// "busy: 32 requests already waiting for memory", "busy: waited 30 s for memory".
    public var description: String {
        switch self {
        case .queueFull(let waiting): return "busy: \(waiting) requests already waiting for memory"
        case .waitTimedOut(let wait):
            let (seconds, attoseconds) = wait.components
            let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
            let text = milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
            return "busy: waited \(text) for memory"
        }
    }
}
