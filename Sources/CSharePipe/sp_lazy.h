// Libraries the shim loads on first use instead of linking: libheif, libde265, libavif, libwebp (+ demux, mux),
// OpenH264 (animations written as MP4) and Little CMS.
// A JPEG, PNG or GIF job never maps them (with their codecs: x265, aom, dav1d, de265, libstdc++ …), which
// keeps about 3.5 MB out of every such process.
//
// Each library is an X-macro list of the functions the shim calls. `SP_LAZY_DECLARE` turns a list into a
// table of function pointers typed from the library's own header (`__typeof__`), so a call site reads
// `sp_libheif.heif_context_alloc()` and the compiler checks every argument as before. `SP_LAZY_DEFINE`
// makes the table and `sp_<id>_require(message)`: the first call `dlopen`s the library by its SONAME and
// resolves every function (pthread_once, so any thread may be first); every call returns SP_OK, or
// SP_ERR_UNAVAILABLE with "<library> not available (<why>)" in `message`. Call it in every shim entry that
// can be the first to touch the library (the ones that create a handle); calls on an existing handle need
// nothing. The environment variable `SHAREPIPE_<ID>` (e.g. SHAREPIPE_LIBHEIF), read once, names another
// file to load: tests use it to make a load fail.
//
// A format's library lives in the format's own shim file (sp_heif.c: libheif, sp_avif.c: libavif, sp_webp.c:
// libwebp/demux/mux, sp_hevc.c: libde265, sp_h264.c: libopenh264): there, include its header, write its list, then one
// SP_LAZY_DECLARE and one SP_LAZY_DEFINE line, and call sp_<id>_require where a handle is created. Only a
// library more than one shim file calls (Little CMS: sp_color.c, sp_heif.c) is declared here and defined in
// sp_lazy.c.
#ifndef SP_LAZY_H
#define SP_LAZY_H

#include "sp_common.h"

#include <dlfcn.h>
#include <lcms2.h>
#include <pthread.h>
#include <string.h>

#define SP_LIBLCMS2_FUNCTIONS(X) \
    X(cmsCreateContext) \
    X(cmsDeleteContext) \
    X(cmsGetContextUserData) \
    X(cmsSetLogErrorHandlerTHR) \
    X(cmsOpenProfileFromMemTHR) \
    X(cmsCreate_sRGBProfileTHR) \
    X(cmsCreateRGBProfileTHR) \
    X(cmsGetColorSpace) \
    X(cmsCloseProfile) \
    X(cmsCreateTransformTHR) \
    X(cmsDoTransform) \
    X(cmsDeleteTransform) \
    X(cmsBuildParametricToneCurve) \
    X(cmsFreeToneCurve) \
    X(cmsMLUalloc) \
    X(cmsMLUsetASCII) \
    X(cmsMLUfree) \
    X(cmsSetProfileVersion) \
    X(cmsWriteTag) \
    X(cmsSaveProfileToMem)

/// A table field: a pointer of the function's own type, named like the function.
#define SP_LAZY_FIELD(function) __typeof__(function) *function;

/// The table `sp_<id>` and its loader `sp_<id>_require` for the functions in `LIST`.
#define SP_LAZY_DECLARE(id, LIST) \
    typedef struct { LIST(SP_LAZY_FIELD) } sp_##id##_table; \
    extern sp_##id##_table sp_##id; \
    sp_status sp_##id##_require(char *message);

/// One library's load: what to open, and how it went (written once, under pthread_once).
typedef struct {
    const char *name;           // for messages: "libheif"
    const char *soname;         // what dlopen opens: "libheif.so.1"
    const char *environment;    // overrides the file name when set: "SHAREPIPE_LIBHEIF"
    sp_status status;
    char message[SP_MESSAGE_LENGTH];
} sp_lazy_state;

/// Opens the library (dlopen; NULL with `state` failed and its message written).
void *sp_lazy_open(sp_lazy_state *state);
/// After the functions were resolved: `missing` is the first one not found, or NULL.
void sp_lazy_finish(sp_lazy_state *state, void *handle, const char *missing);
/// The load's status, its message copied to `message` when it failed.
sp_status sp_lazy_result(const sp_lazy_state *state, char *message);

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
        void *handle = sp_lazy_open(&id##_state); \
        if (handle == NULL) return; \
        sp_##id##_table *table = &sp_##id; \
        const char *missing = NULL; \
        LIST(SP_LAZY_RESOLVE) \
        sp_lazy_finish(&id##_state, handle, missing); \
        if (missing != NULL) memset(table, 0, sizeof *table); \
    } \
    sp_status sp_##id##_require(char *message) { \
        pthread_once(&id##_once, id##_load); \
        return sp_lazy_result(&id##_state, message); \
    }


SP_LAZY_DECLARE(liblcms2, SP_LIBLCMS2_FUNCTIONS)

#endif
