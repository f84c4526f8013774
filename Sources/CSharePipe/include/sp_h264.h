// H.264 encoding through OpenH264 (libopenh264.so.7, loaded on first use: sp_lazy.h), for animations written as
// MP4. The shim composites each straight-alpha RGBA picture over a background colour, converts it to 8-bit
// 4:2:0 BT.709 limited-range YCbCr, and hands out each access unit as the MP4 sample it becomes: NAL units each
// prefixed by its 4-byte big-endian length, without the parameter sets (those go into the sample entry).
//
// The encoder runs on the calling thread only (OpenH264's own threads are turned off), so it needs no system call
// beyond memory allocation: it works under the job sandbox (sp_sandbox.h) as the other codecs do. OpenH264 reports
// errors by return code; its log is silenced and no error of it ends the process.
#ifndef SP_H264_H
#define SP_H264_H

#include "sp_common.h"

/// One encoder: one picture size, one quantiser, one stream.
typedef struct sp_h264_encoder sp_h264_encoder;

/// How a stream is encoded.
typedef struct {
    int width;              // luma samples, even, 2...4096 (the caller makes odd sizes even)
    int height;             // even, 2...4096
    int quantizer;          // fixed QP for every frame (rate control off), 0...51: lower is better and larger
    float frame_rate;       // the stream's nominal frame rate (for the level OpenH264 signals)
    int key_interval;       // a key frame (IDR) every this many frames; 0: the first frame only
    int main_profile;       // 1: Main profile (CABAC); 0: Constrained Baseline (CAVLC)
} sp_h264_settings;

/// Opens an encoder (libopenh264 is loaded by the first call). SP_ERR_UNAVAILABLE when the library is missing.
sp_status sp_h264_open(const sp_h264_settings *settings, sp_h264_encoder **encoder, char *message);

/// Encodes one picture: `rgba` is straight-alpha RGBA8, `width` × `height` of the settings, rows `stride` bytes
/// apart, composited over `background` (0xRRGGBB) where alpha is below 255. `timestamp_ms` is when the picture
/// is shown. On return `*sample`/`*sample_length` hold the access unit (valid until the next call on this
/// encoder; length 0 when the encoder skipped the picture), `*is_key` whether it is an IDR picture, and
/// `*transparent_pixels` how many pixels had alpha below 255.
sp_status sp_h264_encode_rgba(sp_h264_encoder *encoder, const uint8_t *rgba, size_t stride, uint32_t background,
                              long long timestamp_ms, int force_key, const uint8_t **sample, size_t *sample_length,
                              int *is_key, size_t *transparent_pixels, char *message);

/// Encodes the last picture the encoder coded (not skipped) again, shown from `timestamp_ms`: a repeat of the
/// picture on screen, which OpenH264 codes as a P picture of skipped macroblocks (16 to 70 bytes from 320×240 to
/// 1920×1080; the first repeat after a picture may also refine it a little toward the source) or, with
/// `force_key`, an IDR picture. SP_ERR_ARGUMENT before any picture was coded. Outputs as sp_h264_encode_rgba.
sp_status sp_h264_encode_repeat(sp_h264_encoder *encoder, long long timestamp_ms, int force_key,
                                const uint8_t **sample, size_t *sample_length, int *is_key, char *message);

/// The stream's sequence and picture parameter sets (without start codes), known after the first picture was
/// encoded; SP_ERR_END before that.
sp_status sp_h264_parameter_sets(const sp_h264_encoder *encoder, const uint8_t **sps, size_t *sps_length,
                                 const uint8_t **pps, size_t *pps_length, char *message);

/// Frees the encoder (NULL is fine).
void sp_h264_close(sp_h264_encoder *encoder);

#endif
