import CSharePipe

/// glibc's allocator, set for a process whose jobs allocate and free large pixel buffers (the CLI, the
/// server): what a job frees goes back to the system instead of staying in the heap for the next job.
public enum ProcessAllocator {
    /// Blocks of 128 KiB or more are mapped on their own (unmapped when freed) and a free top of the heap that
    /// large is trimmed; glibc otherwise raises both thresholds to the largest block freed so far (up to 32 MiB
    /// mapped, twice that kept), so after a job frees a 5 MB render the heap keeps megabytes it no longer uses.
    /// `maxArenas` also caps glibc's arenas (threads then share them: fewer heaps left fragmented by a burst of
    /// jobs); nil keeps glibc's number. Call it before any thread starts. A no-op outside glibc.
    public static func releaseFreedMemoryPromptly(maxArenas: Int? = nil) {
        sp_malloc_release_promptly(Int32(clamping: maxArenas ?? 0))
    }

    /// Returns the free memory of every glibc arena to the system (after a burst of jobs, RSS falls back near
    /// its level at rest); whether some was returned. A no-op outside glibc.
    @discardableResult
    public static func trim() -> Bool { sp_malloc_trim() != 0 }
}
