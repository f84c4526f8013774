// The lazy loader (see sp_lazy.h): one dlopen per library, on first use, its functions resolved into a table;
// and Little CMS's table (the one library two shim files call).
#include "sp_lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/// Opens the library (never closed: its functions stay in the table for the life of the process).
void *sp_lazy_open(sp_lazy_state *state) {
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
void sp_lazy_finish(sp_lazy_state *state, void *handle, const char *missing) {
    if (missing == NULL) { state->status = SP_OK; return; }
    const char *file = getenv(state->environment);
    snprintf(state->message, SP_MESSAGE_LENGTH, "%s not available (%s has no %s)", state->name,
             file != NULL && file[0] != '\0' ? file : state->soname, missing);
    state->status = SP_ERR_UNAVAILABLE;
    dlclose(handle);
}

sp_status sp_lazy_result(const sp_lazy_state *state, char *message) {
    if (state->status != SP_OK) sp_copy_message(message, state->message);
    return state->status;
}

SP_LAZY_DEFINE(liblcms2, "liblcms2.so.2", "SHAREPIPE_LIBLCMS2", SP_LIBLCMS2_FUNCTIONS)

// The other libraries' loaders (each defined in its format's shim file).
sp_status sp_libheif_require(char *message);
sp_status sp_libde265_require(char *message);
sp_status sp_libavif_require(char *message);
sp_status sp_libwebp_require(char *message);
sp_status sp_libwebpdemux_require(char *message);
sp_status sp_libwebpmux_require(char *message);
sp_status sp_libopenh264_require(char *message);

int sp_lazy_load_all(char *message) {
    sp_status (*const loaders[])(char *) = {
        sp_libheif_require, sp_libde265_require, sp_libavif_require, sp_libwebp_require,
        sp_libwebpdemux_require, sp_libwebpmux_require, sp_liblcms2_require, sp_libopenh264_require,
    };
    int failed = 0;
    char first[SP_MESSAGE_LENGTH] = "";
    for (size_t index = 0; index < sizeof loaders / sizeof loaders[0]; index++) {
        char why[SP_MESSAGE_LENGTH] = "";
        if (loaders[index](why) != SP_OK) {
            if (failed++ == 0) snprintf(first, sizeof first, "%s", why);
        }
    }
    if (failed > 0) sp_copy_message(message, first);
    return failed;
}
