#ifndef SP_COMMON_H
#define SP_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/// Every shim function returns one of these. Anything but SP_OK comes with a message.
typedef enum {
    SP_OK = 0,
    SP_ERR_LIBRARY = 1,   // the C library reported an error (message holds its text)
    SP_ERR_IO = 2,        // opening or reading the file failed
    SP_ERR_MEMORY = 3,    // an allocation failed
    SP_ERR_ARGUMENT = 4,  // the caller passed something the shim cannot use
    SP_ERR_END = 5,       // no more data (end of image / stream)
    SP_ERR_UNAVAILABLE = 6, // a library loaded on first use (sp_lazy.h) could not be loaded: the format is unsupported here
    SP_ERR_UNSUPPORTED = 7, // the file needs a feature the library (or its codec) does not have: the message names it
    SP_ERR_LIMIT = 8       // the library refused the file at one of the limits the caller gave it (message says which)
} sp_status;

/// Size of every caller-owned message buffer.
#define SP_MESSAGE_LENGTH 256

/// Frees memory the shim handed out (encoded bytes).
void sp_free(void *pointer);

/// Copies `text` into a caller-owned message buffer of SP_MESSAGE_LENGTH bytes (cut and terminated, trailing
/// newlines and spaces removed: libraries end some messages with one); does nothing when `message` is NULL.
/// The one copy every shim uses.
void sp_copy_message(char *message, const char *text);

/// The threshold sp_malloc_release_promptly sets (glibc's default before it adapts): 128 KiB.
#define SP_MALLOC_RELEASE_THRESHOLD (128 * 1024)

/// For a process whose jobs allocate and free large pixel buffers (the CLI, the server): glibc's malloc gives
/// memory back to the system as soon as it is freed. Blocks of SP_MALLOC_RELEASE_THRESHOLD or more are mapped on
/// their own (unmapped when freed), and a free top of the heap that large is trimmed. By default glibc raises
/// both thresholds to the largest block freed so far (up to 32 MiB mapped, twice that kept), so after a job
/// frees a 5 MB render the heap keeps megabytes it no longer uses. `max_arenas` > 0 also caps glibc's arenas
/// (threads share them: fewer heaps left fragmented); 0 keeps glibc's number. A no-op outside glibc; call it
/// before threads start.
void sp_malloc_release_promptly(int max_arenas);

/// Returns the free memory of every glibc arena (not only the top of the main heap) to the system
/// (malloc_trim(0)): 1 when some was returned. A no-op returning 0 outside glibc.
int sp_malloc_trim(void);

/// The phases of a job at whose start sp_file_pages_phase_starts may unmap read-only file pages: a still's render
/// (SP_FILE_PAGES_RENDER), the auto quality search once its render is made (SP_FILE_PAGES_SEARCH), the report of a
/// job done (SP_FILE_PAGES_REPORT: the CLI's output, then its exit).
#define SP_FILE_PAGES_RENDER 0
#define SP_FILE_PAGES_SEARCH 1
#define SP_FILE_PAGES_REPORT 2
#define SP_FILE_PAGES_PHASES 3

/// For a process that runs a job or a few (the CLI): sp_file_pages_phase_starts unmaps, once per phase and
/// process, the pages of files mapped read-only that the process touched so far. Call it before threads start.
void sp_file_pages_release_at_phases(void);

/// Unmaps from this process the pages of every loaded object's segments that are never writable (the program's
/// and the libraries' code, constants and symbol tables; not RELRO, which lies in a writable segment): the pages
/// stay in the page cache, and the next touch maps them again (with the kernel's fault-around, 64 KiB at a time).
/// Code that ran only before (start-up, argument parsing, the previous phase) then no longer counts in the
/// resident set. Nothing while a debugger traces the process (its breakpoints are copies of code pages). Returns
/// the bytes advised; 0 outside Linux.
size_t sp_file_pages_unmap(void);

/// At the start of `phase` (SP_FILE_PAGES_*): sp_file_pages_unmap, if sp_file_pages_release_at_phases was
/// called and this phase's release has not happened yet in this process; else nothing (0).
size_t sp_file_pages_phase_starts(int phase);

#endif
