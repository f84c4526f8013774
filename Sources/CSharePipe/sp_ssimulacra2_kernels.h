// The row kernels of SSIMULACRA2 (sp_ssimulacra2_kernels.c), written once over a vector of W floats and included once
// per instruction set: plain C (W 1: every architecture, and the tails of rows), SSE2 (W 4: every x86-64) and
// AVX2 (W 8: where cpuid reports it). The includer defines:
//   KERNEL(name)  the kernel's name with the set's suffix      KERNEL_ATTR  the function attribute (target)
//   W, vf          the width and the vector type               LD, ST, SET  load, store, broadcast
//   ADD, SUB, MUL, DIV, MAX, ABS                               CBRT_GUESS   the cube root's first guess
//   HSUM           the sum of a vector's lanes (a float)
// and this file undefines all of them at its end, ready for the next set.
// Every kernel handles the first multiple of W of its `n` samples and returns how many that is; the caller
// finishes the row with the plain C kernel. The blurs and the XYB conversion do the same operations in the same
// order at every width (no fused multiply-add), so their results do not depend on the instruction set; the
// pooled sums are added in another order.

// Linear RGB planes to the metric's positive XYB: `all` 0 writes only Y (the scales whose X and B are not
// scored), 1 all three planes.
KERNEL_ATTR static int KERNEL(to_xyb)(const float *r, const float *g, const float *b, float *x_out, float *y_out,
                                      float *b_out, int n, int all, float bias) {
    const vf tiny = SET(1e-20f), v_bias = SET(bias), absorbance = SET(opsin_bias), half = SET(0.5f);
    const vf two = SET(2.0f);
    int i = 0;
    for (; i + W <= n; i += W) {
        const vf red = LD(r + i), green = LD(g + i), blue = LD(b + i);
        vf mixed[3];
        for (int c = 0; c < (all ? 3 : 2); c++) {
            vf m = ADD(ADD(ADD(MUL(SET(opsin[c][0]), red), MUL(SET(opsin[c][1]), green)), MUL(SET(opsin[c][2]), blue)),
                       absorbance);
            m = MAX(m, tiny);
            // The cube root: a first guess from the bits (within a few percent), then one Halley step (within
            // 3e-5; one division where two Newton steps took two, and the time: the score moves by under 0.001).
            vf root = CBRT_GUESS(m);
            const vf cube = MUL(MUL(root, root), root);
            root = MUL(root, DIV(ADD(cube, MUL(two, m)), ADD(MUL(two, cube), m)));
            mixed[c] = SUB(root, v_bias);
        }
        const vf y = MUL(half, ADD(mixed[0], mixed[1]));
        ST(y_out + i, ADD(y, SET(0.01f)));
        if (all) {
            const vf x = MUL(half, SUB(mixed[0], mixed[1]));
            ST(x_out + i, ADD(MUL(x, SET(14.0f)), SET(0.42f)));
            ST(b_out + i, ADD(SUB(mixed[2], y), SET(0.55f)));
        }
    }
    return i;
}

// The horizontal blur of one padded plane (`p` its first real sample, RADIUS samples readable each side).
KERNEL_ATTR static int KERNEL(blur_horizontal)(const float *p, float *out, int n, const float *weights) {
    const vf w0 = SET(weights[0]), w1 = SET(weights[1]), w2 = SET(weights[2]), w3 = SET(weights[3]);
    const vf w4 = SET(weights[4]), w5 = SET(weights[5]);
    int i = 0;
#pragma clang loop unroll_count(2)
    for (; i + W <= n; i += W) {
        const float *q = p + i;
        vf sum = MUL(w0, LD(q));
        sum = ADD(sum, MUL(w1, ADD(LD(q - 1), LD(q + 1))));
        sum = ADD(sum, MUL(w2, ADD(LD(q - 2), LD(q + 2))));
        sum = ADD(sum, MUL(w3, ADD(LD(q - 3), LD(q + 3))));
        sum = ADD(sum, MUL(w4, ADD(LD(q - 4), LD(q + 4))));
        sum = ADD(sum, MUL(w5, ADD(LD(q - 5), LD(q + 5))));
        ST(out + i, sum);
    }
    return i;
}

// The vertical blur of a row: `rows` the TAPS rows around it (top to bottom), `n` samples each.
KERNEL_ATTR static size_t KERNEL(blur_vertical)(const float *const *rows, float *out, size_t n,
                                                const float *weights) {
    const vf w0 = SET(weights[0]), w1 = SET(weights[1]), w2 = SET(weights[2]), w3 = SET(weights[3]);
    const vf w4 = SET(weights[4]), w5 = SET(weights[5]);
    const float *r0 = rows[RADIUS];
    const float *a1 = rows[RADIUS - 1], *b1 = rows[RADIUS + 1], *a2 = rows[RADIUS - 2], *b2 = rows[RADIUS + 2];
    const float *a3 = rows[RADIUS - 3], *b3 = rows[RADIUS + 3], *a4 = rows[RADIUS - 4], *b4 = rows[RADIUS + 4];
    const float *a5 = rows[RADIUS - 5], *b5 = rows[RADIUS + 5];
    size_t i = 0;
#pragma clang loop unroll_count(2)
    for (; i + W <= n; i += W) {
        vf sum = MUL(w0, LD(r0 + i));
        sum = ADD(sum, MUL(w1, ADD(LD(a1 + i), LD(b1 + i))));
        sum = ADD(sum, MUL(w2, ADD(LD(a2 + i), LD(b2 + i))));
        sum = ADD(sum, MUL(w3, ADD(LD(a3 + i), LD(b3 + i))));
        sum = ADD(sum, MUL(w4, ADD(LD(a4 + i), LD(b4 + i))));
        sum = ADD(sum, MUL(w5, ADD(LD(a5 + i), LD(b5 + i))));
        ST(out + i, sum);
    }
    return i;
}

// The vertical blur of two rows at once: `rows` the TAPS + 1 rows around them (top to bottom: the first row's
// TAPS, then one more), `first` and `second` their outputs. Each sum is the single row's (the same operations in
// the same order); the rows both read are loaded once, which halves what the ring brings in from the cache.
KERNEL_ATTR static size_t KERNEL(blur_vertical_pair)(const float *const *rows, float *first, float *second, size_t n,
                                                     const float *weights) {
    const vf w0 = SET(weights[0]), w1 = SET(weights[1]), w2 = SET(weights[2]), w3 = SET(weights[3]);
    const vf w4 = SET(weights[4]), w5 = SET(weights[5]);
    size_t i = 0;
    for (; i + W <= n; i += W) {
        vf v[TAPS + 1];
        for (int k = 0; k <= TAPS; k++) v[k] = LD(rows[k] + i);
        for (int o = 0; o < 2; o++) {
            const vf *q = v + o;
            vf sum = MUL(w0, q[RADIUS]);
            sum = ADD(sum, MUL(w1, ADD(q[RADIUS - 1], q[RADIUS + 1])));
            sum = ADD(sum, MUL(w2, ADD(q[RADIUS - 2], q[RADIUS + 2])));
            sum = ADD(sum, MUL(w3, ADD(q[RADIUS - 3], q[RADIUS + 3])));
            sum = ADD(sum, MUL(w4, ADD(q[RADIUS - 4], q[RADIUS + 4])));
            sum = ADD(sum, MUL(w5, ADD(q[RADIUS - 5], q[RADIUS + 5])));
            ST((o == 0 ? first : second) + i, sum);
        }
    }
    return i;
}

// One channel of a blurred row pooled: adds the SSIM map's sum and sum of 4th powers, the artefact map's and the
// detail-lost map's, into `sums`.
KERNEL_ATTR static int KERNEL(pool)(const float *mu1, const float *mu2, const float *squares, const float *s12,
                                    const float *x1, const float *x2, int n, float *sums) {
    const vf one = SET(1.0f), two = SET(2.0f), c2 = SET(0.0009f), zero = SET(0.0f);
    vf total[6] = {zero, zero, zero, zero, zero, zero};
    int i = 0;
    for (; i + W <= n; i += W) {
        const vf m1 = LD(mu1 + i), m2 = LD(mu2 + i);
        const vf difference = SUB(m1, m2);
        const vf mean_term = SUB(one, MUL(difference, difference));
        const vf covariance = ADD(MUL(two, SUB(LD(s12 + i), MUL(m1, m2))), c2);
        // sigma11 + sigma22 from the one blurred sum of squares: (x1² + x2²) − (mu1² + mu2²).
        const vf variances = ADD(SUB(LD(squares + i), ADD(MUL(m1, m1), MUL(m2, m2))), c2);
        const vf d = MAX(SUB(one, DIV(MUL(mean_term, covariance), variances)), zero);
        const vf d2 = MUL(d, d);
        total[0] = ADD(total[0], d);
        total[1] = ADD(total[1], MUL(d2, d2));
        const vf edge = SUB(DIV(ADD(one, ABS(SUB(LD(x2 + i), m2))), ADD(one, ABS(SUB(LD(x1 + i), m1)))), one);
        const vf added = MAX(edge, zero), lost = MAX(SUB(zero, edge), zero);
        const vf added2 = MUL(added, added), lost2 = MUL(lost, lost);
        total[2] = ADD(total[2], added);
        total[3] = ADD(total[3], MUL(added2, added2));
        total[4] = ADD(total[4], lost);
        total[5] = ADD(total[5], MUL(lost2, lost2));
    }
    for (int k = 0; k < 6; k++) sums[k] += HSUM(total[k]);
    return i;
}

#undef KERNEL
#undef KERNEL_ATTR
#undef W
#undef vf
#undef LD
#undef ST
#undef SET
#undef ADD
#undef SUB
#undef MUL
#undef DIV
#undef MAX
#undef ABS
#undef CBRT_GUESS
#undef HSUM
