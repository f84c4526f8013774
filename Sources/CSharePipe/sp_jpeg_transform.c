// Lossless turns through TurboJPEG. tjTransform catches libjpeg's errors with its own setjmp and returns
// -1 with a message, so no longjmp reaches this file.
#include "sp_jpeg_transform.h"

#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

static void copy_text(char *message, const char *text) {
    if (message == NULL) return;
    snprintf(message, SP_MESSAGE_LENGTH, "%s", text != NULL ? text : "unknown TurboJPEG error");
}

sp_status sp_jpeg_turn_losslessly(const uint8_t *jpeg, size_t length, sp_jpeg_turn turn, int progressive,
                                  uint8_t **out, size_t *out_length, char *message) {
    static const int operations[] = {TJXOP_NONE, TJXOP_HFLIP, TJXOP_ROT180, TJXOP_VFLIP,
                                     TJXOP_TRANSPOSE, TJXOP_ROT90, TJXOP_TRANSVERSE, TJXOP_ROT270};
    *out = NULL;
    *out_length = 0;
    if (jpeg == NULL || length == 0 || (int)turn < 0 || (int)turn > 7) {
        copy_text(message, "lossless turn needs a JPEG and one of the eight orientations");
        return SP_ERR_ARGUMENT;
    }
    tjhandle handle = tjInitTransform();
    if (handle == NULL) { copy_text(message, tjGetErrorStr2(NULL)); return SP_ERR_MEMORY; }

    tjtransform transform;
    memset(&transform, 0, sizeof transform);
    transform.op = operations[turn];
    transform.options = TJXOPT_PERFECT | TJXOPT_COPYNONE | (progressive ? TJXOPT_PROGRESSIVE : 0);
    unsigned char *turned = NULL;
    unsigned long turned_length = 0;
    int result = tjTransform(handle, jpeg, (unsigned long)length, 1, &turned, &turned_length, &transform,
                             TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS);
    sp_status status = SP_OK;
    if (result != 0) {
        const char *text = tjGetErrorStr2(handle);
        copy_text(message, text);
        // "Transform is not perfect": a partial MCU would move (TJXOPT_PERFECT).
        status = text != NULL && strstr(text, "not perfect") != NULL ? SP_ERR_ARGUMENT : SP_ERR_LIBRARY;
    } else {
        *out = malloc(turned_length);
        if (*out == NULL) {
            copy_text(message, "out of memory");
            status = SP_ERR_MEMORY;
        } else {
            memcpy(*out, turned, turned_length);
            *out_length = turned_length;
        }
    }
    tjFree(turned);
    tjDestroy(handle);
    return status;
}
