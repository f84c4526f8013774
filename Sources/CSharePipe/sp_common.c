#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE // dl_iterate_phdr
#endif
#include "sp_common.h"
#include <malloc.h>
#include <stdio.h>
#include <sys/mman.h>
#if defined(__linux__)
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>
#endif
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

#if defined(__linux__)
// Advises away the read-only segments (PT_LOAD without PF_W) of one loaded object; the vDSO is left alone.
static int unmap_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    size_t *advised = data;
    if (info->dlpi_addr == (ElfW(Addr))getauxval(AT_SYSINFO_EHDR)) return 0;
    // An object with text relocations had its code written by the loader: left alone.
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        for (const ElfW(Dyn) *entry = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
             entry->d_tag != DT_NULL; entry++) {
            if (entry->d_tag == DT_TEXTREL || (entry->d_tag == DT_FLAGS && (entry->d_un.d_val & DF_TEXTREL) != 0)) {
                return 0;
            }
        }
    }
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W) != 0 || segment->p_memsz == 0) continue;
        // The whole pages inside the segment only: a page it shares with a writable neighbour is left alone.
        uintptr_t from = (info->dlpi_addr + segment->p_vaddr + page - 1) & ~(page - 1);
        uintptr_t to = (info->dlpi_addr + segment->p_vaddr + segment->p_memsz) & ~(page - 1);
        if (to > from && madvise((void *)from, to - from, MADV_DONTNEED) == 0) *advised += to - from;
    }
    return 0;
}

// Whether a debugger traces the process (its breakpoints are pages of code copied on write: kept).
static int traced(void) {
    FILE *status = fopen("/proc/self/status", "re");
    if (status == NULL) return 0;
    char line[128];
    long tracer = 0;
    while (fgets(line, sizeof line, status) != NULL) {
        if (strncmp(line, "TracerPid:", 10) == 0) {
            tracer = strtol(line + 10, NULL, 10);
            break;
        }
    }
    fclose(status);
    return tracer != 0;
}
#endif

size_t sp_file_pages_unmap(void) {
#if defined(__linux__)
    // The loaded objects' segments that are never writable: code, constants, symbol tables, never RELRO (it lies
    // in a writable segment, made read-only after relocation). Their pages are the file's (nothing writes them but
    // a debugger), so the ones touched again are read again from the page cache.
    if (traced()) return 0;
    size_t advised = 0;
    dl_iterate_phdr(unmap_object, &advised);
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
