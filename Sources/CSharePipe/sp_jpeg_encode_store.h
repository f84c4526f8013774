// A compact store for the compressor's whole-image coefficient arrays (private to the shim).
//
// With optimize_coding (or a progressive output) libjpeg's compressor quantises the whole image into
// virtual block arrays, 64 × 2 bytes per block, before its Huffman passes read them back: 5.3 MB for a
// 1620×1080 4:2:0 output. Quantised coefficients are mostly zero and mostly small, so the store keeps each
// block row as a 64-bit non-zero map per block plus the non-zero values, one byte each where they fit (16-bit
// for a row of many large ones), exactly (it is lossless: the file written is the same). The rows libjpeg accesses are expanded into a window of full blocks and compacted again when it
// moves on; it replaces the arrays through libjpeg's public memory-manager methods.
#ifndef SP_JPEG_ENCODE_STORE_H
#define SP_JPEG_ENCODE_STORE_H

#include <stddef.h>
#include <stdio.h>
#include <jpeglib.h>

typedef struct sp_enc_array sp_enc_array;

/// The store's state, one per compressor (on the encoding function's stack); cinfo->client_data points at it.
typedef struct {
    jvirt_barray_ptr (*base_request_virt_barray)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);
    void (*base_free_pool)(j_common_ptr, int);
    void (*base_self_destruct)(j_common_ptr);
    sp_enc_array *arrays;
    size_t bytes;               // compacted rows and windows allocated now
    size_t peak_bytes;
} sp_enc_store;

/// Replaces the virtual block arrays of `cinfo` (after jpeg_create_compress, before jpeg_start_compress).
void sp_enc_store_install(j_compress_ptr cinfo, sp_enc_store *store);

#endif
