// What the GIF shim's files share (private to the shim): giflib's header and the text of its error codes.
// sp_gif_read.c: the decoder; sp_gif_write.c: the encoder.
#ifndef SP_GIF_PRIVATE_H
#define SP_GIF_PRIVATE_H

#include "sp_gif.h"

#include <gif_lib.h>

#define copy_message sp_copy_message

/// giflib's text for an error code (GifErrorString), never NULL.
static inline const char *error_text(int code) {
    const char *text = GifErrorString(code);
    return text != NULL ? text : "unknown giflib error";
}

#endif
