#ifndef SP_WEBP_H
#define SP_WEBP_H

#include "sp_common.h"

// libwebp reports errors by status codes (no longjmp), so these calls need no setjmp; they still follow the
// shim contract: a status, and the reason in a caller-owned message buffer.

// MARK: - Still images, incremental

/// An incremental still-image decoder (WebPIDecoder) with its configuration; opaque to Swift.
typedef struct sp_webp_decoder sp_webp_decoder;

/// Creates a decoder that will output rows of `channels` (3: RGB, 4: straight-alpha RGBA) samples at
/// `output_width` × `output_height`. When that differs from the stored size libwebp scales while decoding
/// (its rescaler works on rows, so only the scaled image is ever allocated as output). 0 × 0 decodes at the
/// stored size without the rescaler (libwebp's fancy upsampling, as WebPDecode and WebPAnimDecoder do).
sp_status sp_webp_decoder_new(int output_width, int output_height, int channels, sp_webp_decoder **out,
                              char *message);
/// Feeds the next bytes of the file (copied by libwebp) and decodes as far as they allow. *complete is 1
/// once the image is fully decoded; *rows_ready is the number of output rows finished so far.
sp_status sp_webp_decoder_append(sp_webp_decoder *decoder, const uint8_t *data, size_t length, int *complete,
                                 int *rows_ready, char *message);
/// The output rows decoded so far (NULL before the header was parsed); valid until the next append or free.
const uint8_t *sp_webp_decoder_rows(const sp_webp_decoder *decoder, int *width, int *height, int *stride);
/// Deletes the decoder and its output buffer.
void sp_webp_decoder_free(sp_webp_decoder *decoder);

// MARK: - Animations

/// An animation decoder (WebPAnimDecoder): composites each frame onto the canvas; opaque to Swift.
typedef struct sp_webp_animation sp_webp_animation;

/// What the demuxer validated.
typedef struct {
    int canvas_width;
    int canvas_height;
    int loop_count;             // ANIM loop count as stored: 0 = forever, N = play N times
    int frame_count;
} sp_webp_animation_info;

/// SharePipe composites animations itself, frame by frame from the file (`WebPAnimationSource`); this
/// whole-file decoder is kept as the reference its tests compare every canvas against.
/// Opens an animation on caller-owned bytes (the whole file) that must outlive the decoder. libwebp
/// allocates two canvases here (the current frame and the previous one, disposed).
sp_status sp_webp_animation_open(const uint8_t *data, size_t length, sp_webp_animation **out,
                                 sp_webp_animation_info *info, char *message);
/// The next composited canvas (straight-alpha RGBA, canvas_width × 4 bytes per row) and the time at which
/// it ends, in milliseconds from the start. SP_ERR_END after the last frame. The canvas belongs to the
/// decoder and is overwritten by the next call.
sp_status sp_webp_animation_next(sp_webp_animation *animation, const uint8_t **canvas, int *end_time_ms,
                                 char *message);
/// Deletes the decoder and its canvases.
void sp_webp_animation_free(sp_webp_animation *animation);

// MARK: - Encoding

/// How to compress.
typedef struct {
    int lossless;               // 1: VP8L (exact pixels); 0: VP8 lossy, alpha (if any) in a lossless ALPH chunk
    int quality;                // lossy: 0...100; lossless: compression effort 0...100
    int method;                 // 0 (fast) ... 6 (slowest, smallest)
} sp_webp_encode_settings;

/// A metadata chunk to write around the image: "ICCP", "EXIF", "XMP " or an unknown chunk kept as it was.
typedef struct {
    char fourcc[4];
    const uint8_t *data;
    size_t length;
} sp_webp_chunk;

/// Encodes a whole 8-bit bitmap (rows tightly packed, 3 or 4 channels, straight alpha) to a WebP file in
/// memory; with chunks the file gets a VP8X header with matching flags (through WebPMux). On success *out is malloc'ed and
/// freed with sp_free.
sp_status sp_webp_encode(const uint8_t *pixels, int width, int height, int channels, sp_webp_encode_settings settings,
                         const sp_webp_chunk *chunks, int chunk_count, uint8_t **out, size_t *out_length, char *message);

// MARK: - Scoring an encode

/// The SSIMULACRA2 score (sp_ssimulacra2.h) of the still WebP `webp` against the bitmap it was made from
/// (`pixels`: `width` × `height`, 3 (RGB) or 4 (straight-alpha RGBA) samples a pixel, tightly packed). libwebp
/// decodes the whole picture (its incremental decoder's output buffer: width × height × channels bytes); rows
/// then go to the streaming scorer 8 at a time. With alpha both pictures are composited over a dark and a light
/// grey (10 % and 90 %, the backgrounds of the PyPI `ssimulacra2` package's alpha variant) and the lower score is
/// returned: colour under partial transparency counts on a dark page and a light one, colour under full
/// transparency (which libwebp may change) does not.
sp_status sp_webp_ssimulacra2(const uint8_t *webp, size_t length, const uint8_t *pixels, int width, int height,
                              int channels, double *score, char *message);

#endif
