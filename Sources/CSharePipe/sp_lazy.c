// The lazy loader (see sp_lazy.h): one dlopen per library, on first use, its functions resolved into a table.
#include "sp_lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/// One library's load: what to open, and how it went (written once, under pthread_once).
typedef struct {
    const char *name;           // for messages: "libheif"
    const char *soname;         // what dlopen opens: "libheif.so.1"
    const char *environment;    // overrides the file name when set: "SHAREPIPE_LIBHEIF"
    sp_status status;
    char message[SP_MESSAGE_LENGTH];
} sp_lazy_state;

/// Opens the library (never closed: its functions stay in the table for the life of the process).
static void *lazy_open(sp_lazy_state *state) {
    const char *file = getenv(state->environment);
    if (file == NULL || file[0] == '\0') file = state->soname;
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(state->message, SP_MESSAGE_LENGTH, "%s not available (%s)", state->name,
                 why != NULL ? why : file);
        state->status = SP_ERR_UNAVAILABLE;
    }
    return handle;
}

/// After the functions were resolved: `missing` is the first one not found, or NULL.
static void lazy_finish(sp_lazy_state *state, void *handle, const char *missing) {
    if (missing == NULL) { state->status = SP_OK; return; }
    const char *file = getenv(state->environment);
    snprintf(state->message, SP_MESSAGE_LENGTH, "%s not available (%s has no %s)", state->name,
             file != NULL && file[0] != '\0' ? file : state->soname, missing);
    state->status = SP_ERR_UNAVAILABLE;
    dlclose(handle);
}

static sp_status lazy_result(const sp_lazy_state *state, char *message) {
    if (state->status != SP_OK) sp_copy_message(message, state->message);
    return state->status;
}

/// Resolves one function into `table` (a local of the generated loader); stops at the first one missing.
#define SP_LAZY_RESOLVE(function) \
    if (missing == NULL) { \
        void *symbol = dlsym(handle, #function); \
        if (symbol == NULL) missing = #function; \
        else memcpy(&table->function, &symbol, sizeof symbol); \
    }

/// The table, its state and its loader for one library.
#define SP_LAZY_DEFINE(id, soname, environment, LIST) \
    sp_##id##_table sp_##id; \
    static sp_lazy_state id##_state = { #id, soname, environment, SP_ERR_UNAVAILABLE, "" }; \
    static pthread_once_t id##_once = PTHREAD_ONCE_INIT; \
    static void id##_load(void) { \
        void *handle = lazy_open(&id##_state); \
        if (handle == NULL) return; \
        sp_##id##_table *table = &sp_##id; \
        const char *missing = NULL; \
        LIST(SP_LAZY_RESOLVE) \
        lazy_finish(&id##_state, handle, missing); \
        if (missing != NULL) memset(table, 0, sizeof *table); \
    } \
    sp_status sp_##id##_require(char *message) { \
        pthread_once(&id##_once, id##_load); \
        return lazy_result(&id##_state, message); \
    }

SP_LAZY_DEFINE(libheif, "libheif.so.1", "SHAREPIPE_LIBHEIF", SP_LIBHEIF_FUNCTIONS)
SP_LAZY_DEFINE(libwebp, "libwebp.so.7", "SHAREPIPE_LIBWEBP", SP_LIBWEBP_FUNCTIONS)
SP_LAZY_DEFINE(libwebpdemux, "libwebpdemux.so.2", "SHAREPIPE_LIBWEBPDEMUX", SP_LIBWEBPDEMUX_FUNCTIONS)
SP_LAZY_DEFINE(libwebpmux, "libwebpmux.so.3", "SHAREPIPE_LIBWEBPMUX", SP_LIBWEBPMUX_FUNCTIONS)
SP_LAZY_DEFINE(liblcms2, "liblcms2.so.2", "SHAREPIPE_LIBLCMS2", SP_LIBLCMS2_FUNCTIONS)
SP_LAZY_DEFINE(libde265, "libde265.so.0", "SHAREPIPE_LIBDE265", SP_LIBDE265_FUNCTIONS)
SP_LAZY_DEFINE(libavif, "libavif.so.15", "SHAREPIPE_LIBAVIF", SP_LIBAVIF_FUNCTIONS)
