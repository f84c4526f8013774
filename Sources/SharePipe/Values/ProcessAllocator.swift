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

    /// For a process that runs a job or a few (the CLI): at the start of a still's first render, of the first
    /// `--quality auto` search once its render is made, and of the first job's report (`reportStarts`), the pages
    /// of the program's and the libraries' code and constants touched so far are unmapped (`sp_file_pages_unmap`:
    /// they stay in the page cache, and are mapped again, 64 KiB at a time, where touched). Start-up's code, then
    /// the decoder's, then the job's, no longer count in the peak RSS of the phase after (the 24 MP JPEG: 5–6 MiB
    /// less under auto, and at q85 the report and the exit no longer add their code to the job's). Once per phase
    /// and process: a few hundred page faults each (about half a millisecond). Nothing while a debugger traces the
    /// process. Call it before any thread starts. A no-op outside Linux.
    public static func unmapCodeAtPhases() { sp_file_pages_release_at_phases() }

    /// A still's render starts (`unmapCodeAtPhases`).
    static func renderStarts() { _ = sp_file_pages_phase_starts(SP_FILE_PAGES_RENDER) }

    /// The auto quality search starts, its render made (`unmapCodeAtPhases`).
    static func searchStarts() { _ = sp_file_pages_phase_starts(SP_FILE_PAGES_SEARCH) }

    /// A job is done and its report starts (`unmapCodeAtPhases`): the CLI's output, and after the last its exit.
    public static func reportStarts() { _ = sp_file_pages_phase_starts(SP_FILE_PAGES_REPORT) }
}
