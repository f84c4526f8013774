#ifndef SP_JPEG_TRANSFORM_H
#define SP_JPEG_TRANSFORM_H

#include "sp_common.h"

/// A lossless turn of a JPEG's DCT blocks (TurboJPEG's tjTransform): the operation that displays an image
/// stored with Exif orientation N upright.
typedef enum {
    SP_JPEG_TURN_NONE = 0,
    SP_JPEG_TURN_FLIP_HORIZONTAL = 1,   // orientation 2
    SP_JPEG_TURN_ROTATE_180 = 2,        // orientation 3
    SP_JPEG_TURN_FLIP_VERTICAL = 3,     // orientation 4
    SP_JPEG_TURN_TRANSPOSE = 4,         // orientation 5
    SP_JPEG_TURN_ROTATE_90 = 5,         // orientation 6 (clockwise)
    SP_JPEG_TURN_TRANSVERSE = 6,        // orientation 7
    SP_JPEG_TURN_ROTATE_270 = 7         // orientation 8
} sp_jpeg_turn;

/// Turns a whole JPEG in memory without decoding its pixels, keeping no marker segment (the caller writes the
/// metadata it keeps), progressive when `progressive` is 1. Only perfect turns are made: when the image is
/// not a whole number of MCUs in the direction that moves, it fails with SP_ERR_ARGUMENT ("not perfect").
/// Corrupt data (a libjpeg warning) and more than 500 scans fail with SP_ERR_LIBRARY. On success *out is
/// malloc'ed and freed with sp_free.
sp_status sp_jpeg_turn_losslessly(const uint8_t *jpeg, size_t length, sp_jpeg_turn turn, int progressive,
                                  uint8_t **out, size_t *out_length, char *message);

#endif
