#include "sp_common.h"
#include <malloc.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

void sp_free(void *pointer) { free(pointer); }

void sp_copy_message(char *message, const char *text) {
    if (message == NULL) return;
    strncpy(message, text == NULL ? "" : text, SP_MESSAGE_LENGTH - 1);
    message[SP_MESSAGE_LENGTH - 1] = '\0';
    size_t length = strlen(message);
    while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == '\r' || message[length - 1] == ' ')) {
        message[--length] = '\0';
    }
}

void sp_malloc_release_promptly(int max_arenas) {
#if defined(__GLIBC__)
    (void)mallopt(M_MMAP_THRESHOLD, SP_MALLOC_RELEASE_THRESHOLD);
    (void)mallopt(M_TRIM_THRESHOLD, SP_MALLOC_RELEASE_THRESHOLD);
    if (max_arenas > 0) (void)mallopt(M_ARENA_MAX, max_arenas);
#else
    (void)max_arenas;
#endif
}

int sp_malloc_trim(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}

// MARK: - Read-only file pages at the start of a job's phases

static int file_pages_on;                    // set once, before threads start
static int file_pages_done[SP_FILE_PAGES_PHASES]; // each phase's release happens once per process

void sp_file_pages_release_at_phases(void) { file_pages_on = 1; }

size_t sp_file_pages_unmap(void) {
#if defined(__linux__)
    FILE *smaps = fopen("/proc/self/smaps", "re");
    if (smaps == NULL) return 0;
    char line[512];
    unsigned long start = 0, end = 0;
    int candidate = 0;
    size_t advised = 0;
    while (fgets(line, sizeof line, smaps) != NULL) {
        unsigned long from, to;
        char perms[8];
        int path = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &from, &to, perms, &path) == 3 && path > 0) {
            // A mapping's first line: a file mapped private and not writable (code, constants, symbol tables).
            candidate = perms[1] != 'w' && perms[3] == 'p' && line[path] == '/';
            start = from;
            end = to;
        } else if (candidate && strncmp(line, "Anonymous:", 10) == 0) {
            // A page copied on write (relocations made read-only after, a debugger's breakpoint) is not the
            // file's any more: such a mapping is left alone, the rest are read again from the page cache.
            if (strtol(line + 10, NULL, 10) == 0 && madvise((void *)start, end - start, MADV_DONTNEED) == 0) {
                advised += end - start;
            }
            candidate = 0;
        }
    }
    fclose(smaps);
    return advised;
#else
    return 0;
#endif
}

size_t sp_file_pages_phase_starts(int phase) {
    if (!file_pages_on || phase < 0 || phase >= SP_FILE_PAGES_PHASES) return 0;
    if (__atomic_exchange_n(&file_pages_done[phase], 1, __ATOMIC_RELAXED)) return 0;
    return sp_file_pages_unmap();
}
