// What the PNG shim's files share (private to the shim): libpng's header, the error state each libpng
// struct points at, and the error and warning functions. sp_png_read.c: the reader; sp_png_write.c: the
// encoder and its filter choice.
//
// libpng calls, each behind its own setjmp. libpng reports errors by calling the error function, which must
// not return; ours copies the message into the reader (or encoder) state and longjmps back to the shim
// function that made the call, which returns a status. Swift never sees the longjmp.
//
// State that the error path touches lives in heap structs whose pointers are set before setjmp, so
// nothing the longjmp restores is an automatic variable modified in between.
#ifndef SP_PNG_PRIVATE_H
#define SP_PNG_PRIVATE_H

#include "sp_png.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    jmp_buf jump;
    char message[SP_MESSAGE_LENGTH];
    char last_warning[SP_MESSAGE_LENGTH];
    int warnings;
    int data_after_image;   // libpng found compressed data (or IDATs) after the image: "Too much image data"
} sp_png_error_state;

#define copy_message sp_copy_message

static inline void on_error(png_structp png, png_const_charp text) {
    sp_png_error_state *error = (sp_png_error_state *)png_get_error_ptr(png);
    // libpng explains an IHDR refusal (e.g. "Image width exceeds user limit") in warnings and then fails
    // with a generic "Invalid IHDR data": keep the explanation.
    if (error->warnings > 0 && strcmp(text, "Invalid IHDR data") == 0) {
        snprintf(error->message, SP_MESSAGE_LENGTH, "%s (%s)", text, error->last_warning);
    } else {
        copy_message(error->message, text);
    }
    longjmp(error->jump, 1);
}

static inline void on_warning(png_structp png, png_const_charp text) {
    sp_png_error_state *error = (sp_png_error_state *)png_get_error_ptr(png);
    error->warnings += 1;
    copy_message(error->last_warning, text);
    if (strstr(text, "Too much image data") != NULL || strstr(text, "Too many IDATs") != NULL) error->data_after_image = 1;
}

// libpng 1.6 recognises the widespread HP/Microsoft "sRGB IEC61966-2.1" profile (3,144 bytes, in countless
// files from old Photoshop, GIMP and Windows tools) and flags it "known incorrect sRGB profile": a warning on
// read, an error on write, so every such PNG that needs resizing would fail at encode. Browsers use the
// profile as it is; so do we: the check is skipped and the profile is kept byte for byte.
static inline void skip_srgb_profile_check(png_structp png) {
    png_set_option(png, PNG_SKIP_sRGB_CHECK_PROFILE, PNG_OPTION_ON);
}

#endif
