// Each scan decoded once over all bands (private to the shim).
//
// A banded decode (sp_jpeg_coefficients.h) reads the file once per band. Without help every band's read runs
// the entropy decoder over every scan of the whole image: three bands, three entropy decodes. The skipper
// makes a band's read decode only the band's iMCU rows of each scan: in every scan it starts at the band's
// first row from the entropy decoder's state there, which the previous band's read saved (a checkpoint: the
// source position, the bit buffer, the EOB run, the DC predictors, the restart counters), and once the
// scan reaches the end of the band it skips the rest of the scan's data to the next marker (entropy-coded
// data holds 0xFF only as a stuffed FF 00 or a restart marker, so the first other marker ends the scan).
// Rows outside the band are then never decoded, so the store keeps nothing for them (not even the non-zero
// map a refinement scan reads: no refinement scan reads those rows). The first band's read starts every
// scan at row 0 (nothing to skip before it) and saves checkpoints near its end for the next.
//
// The pixels are libjpeg's: a band's rows see, scan by scan, the same entropy decoder state and the same
// coefficient history as in a decode of the whole file (rows before the band's first row only feed the
// decoder's state, which the checkpoint restores; rows after it are not read by the band's output).
//
// libjpeg-turbo 2.1 internals relied on (jdphuff.c, jdcoefct.c, jdinput.c, jdhuff.h, jpegint.h):
// - The progressive Huffman decoder's private state follows its public part: the bit buffer (a size_t and
//   an int), the EOB run and DC predictors, then restarts_to_go. Between MCUs that state is complete (it is
//   loaded at an MCU's start and stored at its end); the bit buffer's bytes have left the source manager, a
//   marker met while filling it is in cinfo->unread_marker. Checked at each scan's start against what
//   start_pass_phuff_decoder sets (a mismatch turns the skipping off before anything was skipped).
// - The coefficient controller decodes one iMCU row per consume_data call, at cinfo->input_iMCU_row, and at
//   the start of any row but the last its private counters are those of row 0 (start_iMCU_row), so moving
//   input_iMCU_row before the call starts the scan at another row. A scan ends with input_iMCU_row at
//   total_iMCU_rows and inputctl->finish_input_pass.
// - jdinput.c's start_input_pass installs cinfo->coef->consume_data as consume_input at every scan: the
//   skipper wraps it once, before the first scan starts (the store's realize_virt_arrays).
// Arithmetic coding adapts its statistics over the whole scan (state the checkpoint does not hold): such
// files, and libjpeg-turbo versions other than 2.1, decode every band from the file's start.
#ifndef SP_JPEG_BAND_SKIP_H
#define SP_JPEG_BAND_SKIP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jpeglib.h>

/// The entropy decoder's state at the start of an iMCU row of one scan.
typedef struct {
    uint64_t offset;            // source position: bytes from the start of the data
    size_t get_buffer;
    int bits_left;
    unsigned int eob_run;
    int last_dc_val[MAX_COMPS_IN_SCAN];
    unsigned int restarts_to_go;
    int16_t unread_marker;
    int16_t next_restart_num;
    uint8_t insufficient_data;
    uint16_t saved;             // the read that wrote it (sp_band_skip.read_number); 0: none
} sp_entropy_checkpoint;

/// Checkpoints one scan saves per read, at most (rows every `save_stride`).
#define SP_SKIP_SLOTS 64

typedef struct sp_band_skip {
    int (*base_consume_data)(j_decompress_ptr);
    FILE *file;                 // the source: a file or the caller's bytes
    const uint8_t *memory;
    size_t memory_length;
    const JDIMENSION *stop;     // each scan is read up to this row: the store's band end, which only shrinks
    int scan_capacity;          // scan numbers the tables hold
    int usable;                 // 0 once the decoder's layout did not match (never skip)
    int active;                 // this read starts each scan at start_row and stops it at *stop
    JDIMENSION start_row;
    sp_entropy_checkpoint *starts;   // per scan: the state at start_row (from the previous read)
    JDIMENSION save_from;       // this read saves checkpoints at save_from + i × save_stride, i < SP_SKIP_SLOTS
    JDIMENSION save_stride;
    sp_entropy_checkpoint *saved;    // per scan × SP_SKIP_SLOTS, allocated with the tables
    int last_scan;              // the highest scan number seen in this read
    uint16_t read_number;       // this read's, 1, 2, …: marks its checkpoints (the table is never cleared)
    size_t bytes;               // the tables' size
    long rows_read;             // iMCU rows the entropy decoder read, every scan of every read so far
} sp_band_skip;

/// Allocates the tables for `scan_capacity` scan numbers (the scan limit plus 2); 0 on failure (no skipping).
int sp_band_skip_init(sp_band_skip *skip, int scan_capacity);

void sp_band_skip_free(sp_band_skip *skip);

/// Before a read's jpeg_start_decompress: whether it skips (`active`, from `start_row` with `starts`), and
/// which rows it saves checkpoints at: every `stride`-th from `save_from` (rows past the last slot none).
void sp_band_skip_begin(sp_band_skip *skip, int active, JDIMENSION start_row, JDIMENSION save_from,
                        JDIMENSION save_end);

/// From the store's realize_virt_arrays: wraps the coefficient controller's consume_data, once per read.
/// Only for a Huffman-coded multi-scan decode.
void sp_band_skip_attach(j_decompress_ptr cinfo, sp_band_skip *skip, const JDIMENSION *stop);

/// After a read: makes the next read start at the latest checkpoint row at or before `wanted` and returns
/// it; 0 (the next read starts every scan at its first row) when some scan of this read saved none there.
JDIMENSION sp_band_skip_prepare_next(sp_band_skip *skip, JDIMENSION wanted);

#endif
