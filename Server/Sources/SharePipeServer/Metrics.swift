import NIOConcurrencyHelpers
import SharePipe

/// Why a request was turned away, as `sharepipe_rejections_total{reason}` counts it.
public enum RejectionReason: String, Sendable, CaseIterable {
    case queueFull = "queue_full"
    case queueTimeout = "queue_timeout"
    case bodyTooLarge = "body_too_large"
    case readTimeout = "read_timeout"
    case draining
    case unauthorized
}

/// The server's counters, written in the Prometheus text format 0.0.4 by `GET /metrics`. The gauges of the
/// budget, the spool folder and the process are read when the page is made.
public final class ServerMetrics: Sendable {
    private struct RequestKey: Hashable { var route: String; var status: Int; var service: String }

    private struct State {
        var requests: [RequestKey: Int] = [:]
        var requestBodyBytes = 0
        var responseBodyBytes = 0
        var durationBuckets = [Int](repeating: 0, count: ServerMetrics.durationBounds.count)
        var durationSum = 0.0
        var durationCount = 0
        var rejections: [RejectionReason: Int] = [:]
        var clientDisconnects = 0
    }

    /// Upper bounds of the prepare-time histogram's buckets, in seconds (`+Inf` is added).
    static let durationBounds: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// One answered request: its route (`/v1/prepare`, …, or `other`), status and service label.
    func countRequest(route: String, status: Int, service: String) {
        state.withLockedValue {
            $0.requests[RequestKey(route: route, status: status, service: service), default: 0] += 1
        }
    }

    func countRequestBody(_ bytes: Int) { state.withLockedValue { $0.requestBodyBytes += bytes } }
    func countResponseBody(_ bytes: Int) { state.withLockedValue { $0.responseBodyBytes += bytes } }
    func countRejection(_ reason: RejectionReason) { state.withLockedValue { $0.rejections[reason, default: 0] += 1 } }
    func countClientDisconnect() { state.withLockedValue { $0.clientDisconnects += 1 } }

    /// One prepare call's time, from the first body byte to the prepared images.
    func observePrepare(seconds: Double) {
        state.withLockedValue { state in
            for (index, bound) in Self.durationBounds.enumerated() where seconds <= bound {
                state.durationBuckets[index] += 1
            }
            state.durationSum += seconds
            state.durationCount += 1
        }
    }

    /// Rejections counted so far for `reason` (for the tests and the log).
    func rejections(_ reason: RejectionReason) -> Int { state.withLockedValue { $0.rejections[reason] ?? 0 } }

    /// The gauges read at scrape time.
    struct Gauges {
        var budget: MemoryBudget.Usage
        var capacity: Int
        var spoolFiles: Int
        var residentBytes: Int
        var peakResidentBytes: Int
        /// The process sandbox's layers (nil: not entered, every layer 0).
        var sandbox: ProcessSandbox.Report?
    }

    /// The whole page.
    func exposition(_ gauges: Gauges) -> String {
        let state = state.withLockedValue { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sample(_ name: String, _ value: String) { labeled(name, [], value) }
        func labeled(_ name: String, _ labels: [(String, String)], _ value: String) {
            let text =
                labels.isEmpty
                ? "" : "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
            out += "\(name)\(text) \(value)\n"
        }
        family("sharepipe_requests_total", "counter", "Requests answered, by route, status and service.")
        for (key, count) in state.requests.sorted(by: {
            ($0.key.route, $0.key.status, $0.key.service) < ($1.key.route, $1.key.status, $1.key.service)
        }) {
            labeled(
                "sharepipe_requests_total",
                [("route", key.route), ("status", String(key.status)), ("service", key.service)], String(count))
        }
        family("sharepipe_request_body_bytes_total", "counter", "Request body bytes received.")
        sample("sharepipe_request_body_bytes_total", String(state.requestBodyBytes))
        family("sharepipe_response_body_bytes_total", "counter", "Response body bytes sent.")
        sample("sharepipe_response_body_bytes_total", String(state.responseBodyBytes))
        family(
            "sharepipe_prepare_duration_seconds", "histogram",
            "Time of a prepare request, from its first body byte to its prepared images.")
        var cumulative = 0
        for (index, bound) in Self.durationBounds.enumerated() {
            cumulative = state.durationBuckets[index]
            labeled("sharepipe_prepare_duration_seconds_bucket", [("le", Self.number(bound))], String(cumulative))
        }
        labeled("sharepipe_prepare_duration_seconds_bucket", [("le", "+Inf")], String(state.durationCount))
        sample("sharepipe_prepare_duration_seconds_sum", Self.number(state.durationSum))
        sample("sharepipe_prepare_duration_seconds_count", String(state.durationCount))
        family("sharepipe_budget_capacity_bytes", "gauge", "The memory budget.")
        sample("sharepipe_budget_capacity_bytes", String(gauges.capacity))
        family("sharepipe_budget_reserved_bytes", "gauge", "Bytes of the budget reserved now.")
        sample("sharepipe_budget_reserved_bytes", String(gauges.budget.reservedBytes))
        family(
            "sharepipe_budget_peak_reserved_bytes", "gauge", "Most bytes of the budget reserved at once since start.")
        sample("sharepipe_budget_peak_reserved_bytes", String(gauges.budget.peakReservedBytes))
        family("sharepipe_jobs_running", "gauge", "Jobs running now.")
        sample("sharepipe_jobs_running", String(gauges.budget.runningJobs))
        family("sharepipe_queue_waiting", "gauge", "Requests waiting for memory now.")
        sample("sharepipe_queue_waiting", String(gauges.budget.waitingRequests))
        family("sharepipe_rejections_total", "counter", "Requests turned away, by reason.")
        for reason in RejectionReason.allCases {
            labeled("sharepipe_rejections_total", [("reason", reason.rawValue)], String(state.rejections[reason] ?? 0))
        }
        family(
            "sharepipe_client_disconnects_total", "counter",
            "Requests whose client went away before the answer; their jobs were cancelled.")
        sample("sharepipe_client_disconnects_total", String(state.clientDisconnects))
        family("sharepipe_spool_files", "gauge", "Spool files existing now.")
        sample("sharepipe_spool_files", String(gauges.spoolFiles))
        family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
        sample("process_resident_memory_bytes", String(gauges.residentBytes))
        family("process_peak_resident_memory_bytes", "gauge", "Peak resident memory size in bytes (VmHWM).")
        sample("process_peak_resident_memory_bytes", String(gauges.peakResidentBytes))
        family(
            "sharepipe_sandbox_layer", "gauge",
            "1 when the layer of the process sandbox is on (0: --no-sandbox, not entered, or the kernel lacks it).")
        for layer in (gauges.sandbox ?? ProcessSandbox.Report()).layers {
            labeled("sharepipe_sandbox_layer", [("layer", layer.name)], layer.on ? "1" : "0")
        }
        return out
    }

    static func escape(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// A float as Prometheus reads it ("0.05", "1", "2.5").
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
