// libde265 calls for the tiles of a HEIF grid image and for a single HEVC image (HEIFGrid.swift parses the boxes). libde265 reports errors
// as returned de265_error values (no longjmp, no exit); each becomes SP_ERR_LIBRARY with a message naming the
// tile. The decode mirrors libheif 1.15's libde265 plugin: one decoder per coded image, the parameter sets and
// then the image's NAL units pushed, flushed, decoded until no more work.
#include "sp_hevc.h"

#include "sp_lazy.h"
#include <limits.h>
#include <malloc.h>

#if defined(__SANITIZE_ADDRESS__)
#define SP_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SP_ADDRESS_SANITIZER 1
#endif
#endif
#ifndef SP_ADDRESS_SANITIZER
#define SP_ADDRESS_SANITIZER 0
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libde265/de265.h>

// The library this file loads on first use (sp_lazy.h).
// libde265 directly, for the grid tile route (sp_hevc.c); libheif loads its own copy through its plugin.
#define SP_LIBDE265_FUNCTIONS(X) \
    X(de265_init) \
    X(de265_set_verbosity) \
    X(de265_get_error_text) \
    X(de265_new_decoder) \
    X(de265_free_decoder) \
    X(de265_push_NAL) \
    X(de265_flush_data) \
    X(de265_decode) \
    X(de265_get_next_picture) \
    X(de265_release_next_picture) \
    X(de265_get_image_width) \
    X(de265_get_image_height) \
    X(de265_get_chroma_format) \
    X(de265_get_bits_per_pixel) \
    X(de265_get_image_plane) \
    X(de265_get_image_full_range_flag) \
    X(de265_get_image_colour_primaries) \
    X(de265_get_image_transfer_characteristics) \
    X(de265_get_image_matrix_coefficients)

SP_LAZY_DECLARE(libde265, SP_LIBDE265_FUNCTIONS)
SP_LAZY_DEFINE(libde265, "libde265.so.0", "SHAREPIPE_LIBDE265", SP_LIBDE265_FUNCTIONS)

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static de265_error init_error = DE265_OK;
// Reference counted inside libde265 (libheif's plugin calls it too): one call for the process, no de265_free.
// Verbosity is process-wide in libde265: set once here, never from concurrent decodes.
static void init_library(void) {
    init_error = sp_libde265.de265_init();
    if (init_error == DE265_OK) sp_libde265.de265_set_verbosity(0);
}

/// Loads libde265 and initialises it once for the process. Returns SP_OK or fills `message`.
static sp_status require_library(char *message) {
    sp_status loaded = sp_libde265_require(message);
    if (loaded != SP_OK) return loaded;
    pthread_once(&init_once, init_library);
    if (init_error != DE265_OK) { sp_copy_message(message, sp_libde265.de265_get_error_text(init_error)); return SP_ERR_LIBRARY; }
    return SP_OK;
}

/// Pushes `data`'s NAL units (each after its 4-byte big-endian length) into `decoder`. `what` names the data
/// in messages ("tile 3", "image"), `whose` its owner ("tile's", "image's"). Returns SP_OK or fills `message`.
static sp_status push_nal_units(de265_decoder_context *decoder, const uint8_t *data, size_t length, const char *what,
                                const char *whose, char *message) {
    size_t position = 0;
    while (position < length) {
        if (length - position < 4) {
            snprintf(message, SP_MESSAGE_LENGTH, "%s: coded data ends inside a NAL unit length", what);
            return SP_ERR_LIBRARY;
        }
        uint32_t size = (uint32_t)data[position] << 24 | (uint32_t)data[position + 1] << 16
                      | (uint32_t)data[position + 2] << 8 | (uint32_t)data[position + 3];
        position += 4;
        if (size > (uint32_t)INT_MAX) {   // de265_push_NAL takes an int
            snprintf(message, SP_MESSAGE_LENGTH, "%s: NAL unit of %u bytes is too large", what, size);
            return SP_ERR_LIBRARY;
        }
        if (size > length - position) {
            snprintf(message, SP_MESSAGE_LENGTH, "%s: NAL unit of %u bytes runs past the %s data", what, size, whose);
            return SP_ERR_LIBRARY;
        }
        de265_error error = sp_libde265.de265_push_NAL(decoder, data + position, (int)size, 0, NULL);
        if (error != DE265_OK) {
            snprintf(message, SP_MESSAGE_LENGTH, "%s: %s", what, sp_libde265.de265_get_error_text(error));
            return error == DE265_ERROR_OUT_OF_MEMORY ? SP_ERR_MEMORY : SP_ERR_LIBRARY;
        }
        position += size;
    }
    return SP_OK;
}

/// One turn of libde265's decoding loop after de265_flush_data: the next picture, or NULL. With NULL, `*status`
/// is SP_OK when this turn gave no picture (call again while `*more`) or the flushed data has ended (`*more` 0);
/// otherwise the failure, with `message` filled naming `what`, and `*more` 0.
static const struct de265_image *decode_step(de265_decoder_context *decoder, int *more, const char *what,
                                             sp_status *status, char *message) {
    *more = 0;
    *status = SP_OK;
    de265_error error = sp_libde265.de265_decode(decoder, more);
    if (error != DE265_OK) {
        *more = 0;
        // WAITING_FOR_INPUT_DATA at the end of the flushed data is the normal end.
        if (error != DE265_ERROR_WAITING_FOR_INPUT_DATA) {
            snprintf(message, SP_MESSAGE_LENGTH, "%s: %s", what, sp_libde265.de265_get_error_text(error));
            *status = error == DE265_ERROR_OUT_OF_MEMORY ? SP_ERR_MEMORY : SP_ERR_LIBRARY;
        }
        return NULL;
    }
    return sp_libde265.de265_get_next_picture(decoder);
}

/// Decodes one tile and copies its visible part. Returns SP_OK or fills `message`.
static sp_status decode_tile(sp_hevc_tile *tile, int index, char *message) {
    de265_decoder_context *decoder = sp_libde265.de265_new_decoder();
    if (decoder == NULL) { snprintf(message, SP_MESSAGE_LENGTH, "tile %d: out of memory for the HEVC decoder", index); return SP_ERR_MEMORY; }
    char what[32];
    snprintf(what, sizeof what, "tile %d", index);
    sp_status result = push_nal_units(decoder, tile->data, tile->length, what, "tile's", message);
    int pictures = 0;
    if (result == SP_OK) {
        sp_libde265.de265_flush_data(decoder);
        int more = 0;
        do {
            sp_status step = SP_OK;
            char step_message[SP_MESSAGE_LENGTH] = {0};
            const struct de265_image *image = decode_step(decoder, &more, what, &step, step_message);
            if (step != SP_OK) {
                // A failure once a picture has come ends the loop but not the tile.
                if (pictures == 0) { result = step; sp_copy_message(message, step_message); }
                break;
            }
            if (image == NULL) continue;
            pictures++;
            int width = sp_libde265.de265_get_image_width(image, 0), height = sp_libde265.de265_get_image_height(image, 0);
            int chroma = (int)sp_libde265.de265_get_chroma_format(image);
            if (width != tile->width || height != tile->height || chroma != tile->chroma) {
                snprintf(message, SP_MESSAGE_LENGTH, "tile %d decodes to %d×%d (chroma %d), its boxes say %d×%d (chroma %d)",
                         index, width, height, chroma, tile->width, tile->height, tile->chroma);
                result = SP_ERR_LIBRARY;
            }
            for (int c = 0; c < 3 && result == SP_OK; c++) {
                if (sp_libde265.de265_get_bits_per_pixel(image, c) != 8) {
                    snprintf(message, SP_MESSAGE_LENGTH, "tile %d: %d bits per sample (8 expected)", index,
                             sp_libde265.de265_get_bits_per_pixel(image, c));
                    result = SP_ERR_LIBRARY;
                }
            }
            if (result == SP_OK) {
                int stride = 0;
                const uint8_t *plane = sp_libde265.de265_get_image_plane(image, 0, &stride);
                for (int y = 0; y < tile->copy_height; y++) {
                    memcpy(tile->y + (size_t)y * (size_t)tile->y_stride, plane + (size_t)y * (size_t)stride, (size_t)tile->copy_width);
                }
                int chroma_width = sp_hevc_chroma_width(chroma, tile->copy_width);
                int chroma_height = sp_hevc_chroma_height(chroma, tile->copy_height);
                uint8_t *targets[2] = { tile->cb, tile->cr };
                for (int c = 1; c <= 2; c++) {
                    plane = sp_libde265.de265_get_image_plane(image, c, &stride);
                    for (int y = 0; y < chroma_height; y++) {
                        memcpy(targets[c - 1] + (size_t)y * (size_t)tile->c_stride, plane + (size_t)y * (size_t)stride,
                               (size_t)chroma_width);
                    }
                }
                tile->full_range = sp_libde265.de265_get_image_full_range_flag(image);
                tile->color_primaries = sp_libde265.de265_get_image_colour_primaries(image);
                tile->transfer_characteristics = sp_libde265.de265_get_image_transfer_characteristics(image);
                tile->matrix_coefficients = sp_libde265.de265_get_image_matrix_coefficients(image);
            }
            sp_libde265.de265_release_next_picture(decoder);
        } while (more && result == SP_OK);
    }
    if (result == SP_OK && pictures == 0) {
        snprintf(message, SP_MESSAGE_LENGTH, "tile %d: no picture decoded", index);
        result = SP_ERR_LIBRARY;
    }
    sp_libde265.de265_free_decoder(decoder);
    return result;
}

typedef struct {
    sp_hevc_tile *tiles;
    int count;
    int next;                   // the next tile to take
    sp_status result;           // the first failure
    char message[SP_MESSAGE_LENGTH];
    pthread_mutex_t lock;
} work_queue;

static void *worker(void *argument) {
    work_queue *queue = argument;
    for (;;) {
        pthread_mutex_lock(&queue->lock);
        int index = queue->result == SP_OK && queue->next < queue->count ? queue->next++ : -1;
        pthread_mutex_unlock(&queue->lock);
        if (index < 0) return NULL;
        char message[SP_MESSAGE_LENGTH] = {0};
        sp_status status = decode_tile(&queue->tiles[index], queue->tiles[index].index, message);
        if (status != SP_OK) {
            pthread_mutex_lock(&queue->lock);
            if (queue->result == SP_OK) {
                queue->result = status;
                memcpy(queue->message, message, sizeof(message));
            }
            pthread_mutex_unlock(&queue->lock);
        }
    }
}

sp_status sp_hevc_decode_tiles(sp_hevc_tile *tiles, int count, int threads, char *message) {
    if (tiles == NULL || count <= 0) { sp_copy_message(message, "no tiles"); return SP_ERR_ARGUMENT; }
    for (int i = 0; i < count; i++) {
        sp_hevc_tile *tile = &tiles[i];
        if (tile->data == NULL || tile->y == NULL || tile->cb == NULL || tile->cr == NULL || tile->chroma < 1 || tile->chroma > 3
            || tile->copy_width <= 0 || tile->copy_height <= 0 || tile->copy_width > tile->width
            || tile->copy_height > tile->height || tile->y_stride < tile->copy_width
            || tile->c_stride < sp_hevc_chroma_width(tile->chroma, tile->copy_width)) {
            snprintf(message, SP_MESSAGE_LENGTH, "tile %d: bad arguments", i);
            return SP_ERR_ARGUMENT;
        }
        tile->full_range = tile->color_primaries = tile->transfer_characteristics = tile->matrix_coefficients = -1;
    }
    sp_status loaded = require_library(message);
    if (loaded != SP_OK) return loaded;
    work_queue queue = { .tiles = tiles, .count = count, .next = 0, .result = SP_OK };
    pthread_mutex_init(&queue.lock, NULL);
    int helpers = threads - 1 < count - 1 ? threads - 1 : count - 1;
    pthread_t ids[8];
    if (helpers > 8) helpers = 8;
    int started = 0;
    for (; started < helpers; started++) {
        if (pthread_create(&ids[started], NULL, worker, &queue) != 0) break;  // fewer helpers: still correct
    }
    worker(&queue);
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
    pthread_mutex_destroy(&queue.lock);
    if (queue.result != SP_OK) sp_copy_message(message, queue.message);
    return queue.result;
}

struct sp_hevc_image {
    de265_decoder_context *decoder;
    int width, height, chroma;  // what the picture must be
};

sp_status sp_hevc_image_open(const uint8_t *data, size_t length, int width, int height, int chroma,
                             sp_hevc_image **out, char *message) {
    if (out == NULL) { sp_copy_message(message, "no output"); return SP_ERR_ARGUMENT; }
    *out = NULL;
    if (data == NULL || length == 0 || width <= 0 || height <= 0 || chroma < 1 || chroma > 3) {
        sp_copy_message(message, "image: bad arguments");
        return SP_ERR_ARGUMENT;
    }
    sp_status loaded = require_library(message);
    if (loaded != SP_OK) return loaded;
    sp_hevc_image *image = calloc(1, sizeof *image);
    if (image == NULL) { sp_copy_message(message, "image: out of memory"); return SP_ERR_MEMORY; }
    image->width = width;
    image->height = height;
    image->chroma = chroma;
    image->decoder = sp_libde265.de265_new_decoder();
    if (image->decoder == NULL) {
        sp_hevc_image_free(image);
        sp_copy_message(message, "image: out of memory for the HEVC decoder");
        return SP_ERR_MEMORY;
    }
    sp_status pushed = push_nal_units(image->decoder, data, length, "image", "image's", message);
    if (pushed != SP_OK) {
        sp_hevc_image_free(image);
        return pushed;
    }
    sp_libde265.de265_flush_data(image->decoder);
    *out = image;
    return SP_OK;
}

/// Decodes up to the decoder's first picture, which stays in the decoder (not released). Returns SP_OK with
/// `*picture` set, or fills `message`.
static sp_status decode_first_picture(de265_decoder_context *decoder, const struct de265_image **picture, char *message) {
    *picture = NULL;
    int more = 0;
    do {
        sp_status step = SP_OK;
        *picture = decode_step(decoder, &more, "image", &step, message);
        if (step != SP_OK) return step;
        if (*picture != NULL) return SP_OK;
    } while (more);
    sp_copy_message(message, "image: no picture decoded");
    return SP_ERR_LIBRARY;
}

sp_status sp_hevc_image_decode(sp_hevc_image *image, sp_hevc_planes *planes, char *message) {
    if (planes == NULL) { sp_copy_message(message, "no output"); return SP_ERR_ARGUMENT; }
    memset(planes, 0, sizeof *planes);
    if (image == NULL || image->decoder == NULL) { sp_copy_message(message, "image: not opened"); return SP_ERR_ARGUMENT; }
    // The caller's copy of the coded data, freed after sp_hevc_image_open, is usually in glibc's heap (its mmap
    // threshold grows past such sizes once a larger block was freed), where its pages would stay resident
    // through the decode's peak: hand them back first. Not under AddressSanitizer, whose allocator owns the heap:
    // glibc's malloc_trim then walks arenas that tests decoding at once may be setting up (SEGV in mtrim, seen in CI).
#if !SP_ADDRESS_SANITIZER
    malloc_trim(0);
#endif
    const struct de265_image *picture = NULL;
    sp_status result = decode_first_picture(image->decoder, &picture, message);
    if (result != SP_OK) return result;
    int decoded_width = sp_libde265.de265_get_image_width(picture, 0), decoded_height = sp_libde265.de265_get_image_height(picture, 0);
    int decoded_chroma = (int)sp_libde265.de265_get_chroma_format(picture);
    if (decoded_width != image->width || decoded_height != image->height || decoded_chroma != image->chroma) {
        snprintf(message, SP_MESSAGE_LENGTH, "image decodes to %d×%d (chroma %d), its boxes say %d×%d (chroma %d)",
                 decoded_width, decoded_height, decoded_chroma, image->width, image->height, image->chroma);
        return SP_ERR_LIBRARY;
    }
    for (int c = 0; c < 3; c++) {
        if (sp_libde265.de265_get_bits_per_pixel(picture, c) != 8) {
            snprintf(message, SP_MESSAGE_LENGTH, "image: %d bits per sample (8 expected)",
                     sp_libde265.de265_get_bits_per_pixel(picture, c));
            return SP_ERR_LIBRARY;
        }
    }
    // The picture stays in the decoder's output queue (not released) until the decoder is freed.
    planes->y = sp_libde265.de265_get_image_plane(picture, 0, &planes->y_stride);
    planes->cb = sp_libde265.de265_get_image_plane(picture, 1, &planes->cb_stride);
    planes->cr = sp_libde265.de265_get_image_plane(picture, 2, &planes->cr_stride);
    planes->chroma_width = sp_libde265.de265_get_image_width(picture, 1);
    planes->chroma_height = sp_libde265.de265_get_image_height(picture, 1);
    planes->full_range = sp_libde265.de265_get_image_full_range_flag(picture);
    planes->color_primaries = sp_libde265.de265_get_image_colour_primaries(picture);
    planes->transfer_characteristics = sp_libde265.de265_get_image_transfer_characteristics(picture);
    planes->matrix_coefficients = sp_libde265.de265_get_image_matrix_coefficients(picture);
    if (planes->y == NULL || planes->cb == NULL || planes->cr == NULL
        || planes->chroma_width != sp_hevc_chroma_width(image->chroma, image->width)
        || planes->chroma_height != sp_hevc_chroma_height(image->chroma, image->height)) {
        sp_copy_message(message, "image: libde265 gave planes that do not match the picture");
        memset(planes, 0, sizeof *planes);
        return SP_ERR_LIBRARY;
    }
    return SP_OK;
}

void sp_hevc_image_free(sp_hevc_image *image) {
    if (image == NULL) return;
    if (image->decoder != NULL) sp_libde265.de265_free_decoder(image->decoder);
    free(image);
}
