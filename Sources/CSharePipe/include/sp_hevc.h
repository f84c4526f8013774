#ifndef SP_HEVC_H
#define SP_HEVC_H

#include "sp_common.h"

/// One HEVC-coded tile of a HEIF grid image and where its pixels go. The caller (HEIFGrid.swift) parsed the
/// boxes: `data` holds the tile's hvcC parameter sets (VPS, SPS, PPS …) followed by the tile's own coded data,
/// every NAL unit preceded by its length in 4 big-endian bytes.
typedef struct {
    const uint8_t *data;
    size_t length;
    int width, height;          // the tile's coded size (ispe): the decoded picture must have exactly this size
    int chroma;                 // chroma_format_idc the hvcC announces: 1 4:2:0, 2 4:2:2, 3 4:4:4
    // Destination of the tile's top-left pixel in the caller's 8-bit planes, and how much of the tile is
    // copied there (the grid's right and bottom tiles are cut at the output size). Chroma: the matching
    // samples, (copy_width + 1) / 2 wide for 4:2:0 and 4:2:2, (copy_height + 1) / 2 high for 4:2:0.
    uint8_t *y, *cb, *cr;
    int y_stride, c_stride;
    int copy_width, copy_height;
    int index;                  // the tile's number in the grid (row-major), for messages
    // Out: the decoded picture's colour description (libde265's VUI values), -1 before a picture is decoded.
    int full_range, color_primaries, transfer_characteristics, matrix_coefficients;
} sp_hevc_tile;

/// The chroma samples across `width` and down `height` luma samples for chroma_format_idc `chroma`
/// (1 4:2:0, 2 4:2:2, 3 4:4:4): the one rule the shim and HEIFTileDecoding size chroma planes with.
static inline int sp_hevc_chroma_width(int chroma, int width) { return chroma == 3 ? width : (width + 1) / 2; }
static inline int sp_hevc_chroma_height(int chroma, int height) { return chroma == 1 ? (height + 1) / 2 : height; }

/// Decodes `count` tiles with libde265 (a new decoder for each tile, as libheif does) and copies each one's
/// visible part into its destination. `threads` > 1 decodes that many tiles at once, each in its own
/// thread with its own decoder. Any failure stops the work and names the tile (its `index`).
sp_status sp_hevc_decode_tiles(sp_hevc_tile *tiles, int count, int threads, char *message);

/// A single HEVC-coded image decoded by libde265 and kept: the decoder and its picture, whose planes are read
/// in place (no copy) until sp_hevc_image_free.
typedef struct sp_hevc_image sp_hevc_image;

/// The planes of a decoded image: 8-bit luma and two chroma planes as libde265 holds them, and the picture's
/// colour description (libde265's VUI values).
typedef struct {
    const uint8_t *y, *cb, *cr;
    int y_stride, cb_stride, cr_stride;
    int chroma_width, chroma_height;
    int full_range, color_primaries, transfer_characteristics, matrix_coefficients;
} sp_hevc_planes;

/// Starts decoding the one image whose parameter sets and coded data are `data` (NAL units each preceded by
/// its length in 4 big-endian bytes, as for a tile): makes a libde265 decoder and gives it every NAL unit
/// (libde265 copies them, so the caller may free `data` on return). The picture must be `width`×`height` at
/// chroma_format_idc `chroma` with 8-bit samples (checked by sp_hevc_image_decode). On success `*out` holds
/// the decoder; free it with sp_hevc_image_free, also after a failure of sp_hevc_image_decode.
sp_status sp_hevc_image_open(const uint8_t *data, size_t length, int width, int height, int chroma,
                             sp_hevc_image **out, char *message);
/// Decodes the opened image's first picture, else SP_ERR_LIBRARY naming what differs from the expected size,
/// chroma format or bit depth. On success `planes` points into the picture, valid until sp_hevc_image_free.
/// Free the coded data before: this returns the heap's free pages to the system (malloc_trim) first.
sp_status sp_hevc_image_decode(sp_hevc_image *image, sp_hevc_planes *planes, char *message);
/// Frees the decoder and its picture (NULL is allowed).
void sp_hevc_image_free(sp_hevc_image *image);

#endif
