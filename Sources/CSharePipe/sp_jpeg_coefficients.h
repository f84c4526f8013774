// A compact store for libjpeg's whole-image DCT coefficient arrays (private to the shim).
//
// A multi-scan (progressive) JPEG makes libjpeg keep every coefficient of the image, 64 × 2 bytes per block,
// because every scan adds to every block. A DCT-scaled decode reads only some of them (the IDCT of a k/8
// scale, and block smoothing's first ten zigzag positions). The store replaces the arrays libjpeg requests
// through its public memory manager (request_virt_barray / realize_virt_arrays / access_virt_barray) and
// keeps, per block, a one-bit-per-coefficient non-zero map plus the values of the non-zero coefficients the
// IDCT reads. The block rows libjpeg accesses are expanded into a small window of full blocks and compacted
// again when it moves on. Coefficients not kept are expanded as 1 where their bit is set: the entropy decoder
// only ever tests them against zero (successive-approximation refinement) and never turns a non-zero
// coefficient into zero, and the IDCT never reads them, so the decoded pixels are those of libjpeg's own
// arrays (Tests/SharePipeTests/ProgressiveStoreTests.swift checks it byte for byte).
#ifndef SP_JPEG_COEFFICIENTS_H
#define SP_JPEG_COEFFICIENTS_H

#include <stddef.h>
#include <stdio.h>
#include <jpeglib.h>

typedef struct sp_coef_array sp_coef_array;

/// The store's state, one per decompressor; the decompressor's client_data points at it once installed.
typedef struct {
    // libjpeg's own methods, called for everything the store does not handle.
    jvirt_barray_ptr (*base_request_virt_barray)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);
    void (*base_realize_virt_arrays)(j_common_ptr);
    JBLOCKARRAY (*base_access_virt_barray)(j_common_ptr, jvirt_barray_ptr, JDIMENSION, JDIMENSION, boolean);
    void (*base_free_pool)(j_common_ptr, int);
    void (*base_self_destruct)(j_common_ptr);
    sp_coef_array *arrays;      // requested since the image pool was last freed, in request order
    int requested;              // how many; the n-th belongs to component n (libjpeg's coefficient controller)
    long max_bytes;             // 0: no limit; past it the decode fails as libjpeg's own arrays would
    size_t bytes;               // allocated now: compacted rows, windows, row tables
    size_t peak_bytes;
} sp_coef_store;

/// Replaces the virtual block arrays of `cinfo` (after jpeg_create_decompress, before jpeg_start_decompress)
/// with the compact store. `max_bytes` bounds the store (0: no bound).
void sp_coef_store_install(j_decompress_ptr cinfo, sp_coef_store *store, long max_bytes);

#endif
