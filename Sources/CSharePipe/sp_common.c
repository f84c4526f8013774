#include "sp_common.h"
#include <malloc.h>
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
