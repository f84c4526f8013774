// libjpeg calls, each behind its own setjmp. libjpeg reports errors by calling error_exit, whose default
// prints and calls exit(); ours formats the message into the reader and longjmps back to the shim function
// that made the call, which returns a status. Swift never sees the longjmp. This file is that error manager,
// shared by the reader (sp_jpeg_decode.c) and the encoder (sp_jpeg_encode.c).
#include "sp_jpeg_private.h"

#include <stdio.h>
#include <string.h>

static void sp_error_exit(j_common_ptr cinfo) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, error->message);
    // max_memory_to_use refuses a big array with "backing store not supported" (we have none); a failed
    // malloc or a request over libjpeg's 1 GB chunk limit is "insufficient memory". Both mean the image
    // needs more memory than allowed, not that it is damaged.
    int code = cinfo->err->msg_code;
    if (code == JERR_NO_BACKING_STORE || code == JERR_OUT_OF_MEMORY || code == JERR_TFILE_CREATE) {
        error->limit_hit = SP_JPEG_LIMIT_MEMORY;
    }
    longjmp(error->jump, 1);
}

// Stops at a limit: the message says which, Swift adds the numbers.
void sp_jpeg_fail_at_limit(j_common_ptr cinfo, sp_jpeg_limit limit, const char *text) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    error->limit_hit = limit;
    // error->message is libjpeg's JMSG_LENGTH_MAX, shorter than SP_MESSAGE_LENGTH: not copy_message.
    snprintf(error->message, sizeof error->message, "%s", text);
    longjmp(error->jump, 1);
}

// Stops with a message of its own (not a limit): the call returns SP_ERR_LIBRARY.
void sp_jpeg_fail_with(j_common_ptr cinfo, const char *text) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    snprintf(error->message, sizeof error->message, "%s", text);
    longjmp(error->jump, 1);
}

// What a shim function returns when a libjpeg call longjmped back to it.
sp_status sp_jpeg_failure(sp_error_mgr *error, char *message) {
    copy_message(message, error->message);
    return error->limit_hit != SP_JPEG_LIMIT_NONE ? SP_ERR_MEMORY : SP_ERR_LIBRARY;
}

// Level -1 is a warning about corrupt data. Premature end of data is treated as an error: a truncated
// file would otherwise decode with its missing rows filled grey and be posted as if whole. That covers
// the file ending (JWRN_JPEG_EOF) and the image data running into the end-of-image marker before the last
// row (JWRN_HIT_MARKER with EOI next: a cut file with EOI appended, or a header claiming a larger image
// than its data). Other warnings (extraneous bytes, bad Huffman codes, a marker libjpeg resyncs on) are
// counted and reported, and the image is used.
static void sp_emit_message(j_common_ptr cinfo, int level) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    if (level >= 0) return;  // trace messages
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
        strcpy(error->message, "premature end of JPEG data (file is truncated)");
        longjmp(error->jump, 1);
    }
    if (cinfo->err->msg_code == JWRN_HIT_MARKER && cinfo->is_decompressor
        && ((j_decompress_ptr)cinfo)->unread_marker == JPEG_EOI) {
        strcpy(error->message, "image data ends before the last row (premature end of data segment)");
        longjmp(error->jump, 1);
    }
    if (error->quiet) return;
    error->warnings += 1;
    (*cinfo->err->format_message)(cinfo, error->last_warning);
}

static void sp_output_message(j_common_ptr cinfo) { (void)cinfo; }

void sp_jpeg_install_error_manager(j_common_ptr cinfo, sp_error_mgr *error) {
    cinfo->err = jpeg_std_error(&error->pub);
    error->pub.error_exit = sp_error_exit;
    error->pub.emit_message = sp_emit_message;
    error->pub.output_message = sp_output_message;
    error->message[0] = '\0';
    error->last_warning[0] = '\0';
    error->warnings = 0;
    error->limit_hit = SP_JPEG_LIMIT_NONE;
}

const unsigned char sp_jpeg_natural_order[DCTSIZE2] = {
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14,
    21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60,
    61, 54, 47, 55, 62, 63};
