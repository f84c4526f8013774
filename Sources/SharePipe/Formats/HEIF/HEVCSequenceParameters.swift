// The grid route's reader of an HEVC sequence parameter set (H.265 7.3.2.2) up to the VUI's colour description:
// what the tiles' hvcC promises is checked before libde265 sees a byte.
extension HEIFGrid {
    /// The coded picture size and chroma_format_idc of an HEVC sequence parameter set NAL unit (H.265 7.3.2.2).
    static func spsSize(_ unit: [UInt8]) -> (width: Int, height: Int, chroma: Int)? {
        guard let sps = sequenceParameters(unit) else { return nil }
        return (sps.width, sps.height, sps.chroma)
    }

    /// What an HEVC sequence parameter set NAL unit says about the picture (H.265 7.3.2.2, E.2.1): its coded size,
    /// chroma_format_idc, and its colour description as libde265 1.0.11 reports it for the decoded picture
    /// (`de265_get_image_colour_primaries` …): the VUI's video_full_range_flag and colour description, its
    /// defaults (2, 2, 2, limited range) where the SPS has no VUI, no video signal type or no colour
    /// description; primaries 0, 3, ≥ 11 and transfer 0, 3, ≥ 18 replaced by 2 as libde265 1.0.11 does (Display
    /// P3's 12 among them; neither decides the conversion, matrix 12 aside). `colour` is nil where the SPS cannot
    /// be read up to the colour description, or says matrix ≥ 11 (libde265 replaces it by 2, other versions may
    /// not): the caller then leaves the image to libheif rather than guess a colour.
    static func sequenceParameters(_ unit: [UInt8]) -> (width: Int, height: Int, chroma: Int, colour: Colour?)? {
        // The RBSP: emulation prevention bytes (00 00 03) removed, after the 2-byte NAL header.
        var rbsp: [UInt8] = []
        var zeros = 0
        for byte in unit.dropFirst(2) {
            if zeros >= 2 && byte == 3 { zeros = 0; continue }
            zeros = byte == 0 ? zeros + 1 : 0
            rbsp.append(byte)
        }
        var bit = 0
        func read(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard bit < rbsp.count * 8 else { return nil }
                value = value << 1 | Int(rbsp[bit >> 3] >> (7 - UInt8(bit & 7)) & 1)
                bit += 1
            }
            return value
        }
        func golomb() -> Int? {
            var leading = 0
            while true {
                guard let b = read(1) else { return nil }
                if b == 1 { break }
                leading += 1
                guard leading < 32 else { return nil }
            }
            guard let rest = read(leading) else { return nil }
            return (1 << leading) - 1 + rest
        }
        func signedGolomb() -> Int? {
            guard let code = golomb() else { return nil }
            return code & 1 == 1 ? (code + 1) / 2 : -(code / 2)
        }
        guard read(4) != nil, let subLayers = read(3), read(1) != nil else { return nil }
        // profile_tier_level(1, sps_max_sub_layers_minus1): 88 bits of general profile, 8 of level.
        guard read(88) != nil, read(8) != nil else { return nil }
        var profilePresent: [Bool] = [], levelPresent: [Bool] = []
        for _ in 0..<subLayers {
            guard let p = read(1), let l = read(1) else { return nil }
            profilePresent.append(p == 1)
            levelPresent.append(l == 1)
        }
        if subLayers > 0 { for _ in subLayers..<8 { guard read(2) != nil else { return nil } } }
        for i in 0..<subLayers {
            if profilePresent[i] { guard read(88) != nil else { return nil } }
            if levelPresent[i] { guard read(8) != nil else { return nil } }
        }
        guard golomb() != nil, let chroma = golomb() else { return nil }
        if chroma == 3 { guard read(1) != nil else { return nil } }
        guard let width = golomb(), let height = golomb() else { return nil }

        /// The rest of the SPS up to the VUI's colour description; nil on anything out of H.265's ranges.
        func colour() -> Colour? {
            guard let window = read(1) else { return nil }
            if window == 1 { for _ in 0..<4 { guard golomb() != nil else { return nil } } }
            guard golomb() != nil, golomb() != nil,  // bit_depth_luma/chroma_minus8
                let pocBits = golomb(), pocBits <= 12,  // log2_max_pic_order_cnt_lsb_minus4
                let ordering = read(1)
            else { return nil }
            for _ in (ordering == 1 ? 0 : subLayers)...subLayers {  // max_dec_pic_buffering, num_reorder, latency
                for _ in 0..<3 { guard golomb() != nil else { return nil } }
            }
            for _ in 0..<6 { guard golomb() != nil else { return nil } }  // block sizes, transform hierarchy depths
            guard let scaling = read(1) else { return nil }
            if scaling == 1 {
                guard let present = read(1) else { return nil }
                if present == 1 {
                    // scaling_list_data() (7.3.4)
                    for sizeID in 0..<4 {
                        for _ in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                            guard let predicted = read(1) else { return nil }
                            if predicted == 0 {
                                guard golomb() != nil else { return nil }  // scaling_list_pred_matrix_id_delta
                            } else {
                                if sizeID > 1 { guard signedGolomb() != nil else { return nil } }  // dc_coef_minus8
                                for _ in 0..<min(64, 1 << (4 + (sizeID << 1))) {
                                    guard signedGolomb() != nil else { return nil }
                                }
                            }
                        }
                    }
                }
            }
            guard read(1) != nil, read(1) != nil, let pcm = read(1) else { return nil }  // amp, sao, pcm
            if pcm == 1 { guard read(8) != nil, golomb() != nil, golomb() != nil, read(1) != nil else { return nil } }
            // st_ref_pic_set(i) (7.3.7), each set's delta POCs derived (7.4.8) for the next one's prediction.
            guard let setCount = golomb(), setCount <= 64 else { return nil }
            var sets: [(negative: [Int], positive: [Int])] = []
            for index in 0..<setCount {
                let predicted = index == 0 ? 0 : read(1)
                guard let predicted else { return nil }
                if predicted == 1 {
                    let reference = sets[index - 1]  // delta_idx_minus1 is only in slice headers
                    guard let sign = read(1), let magnitude = golomb(), magnitude < 1 << 15 else { return nil }
                    let deltaRps = (1 - 2 * sign) * (magnitude + 1)
                    let count = reference.negative.count + reference.positive.count
                    var use: [Bool] = []
                    for _ in 0...count {
                        guard let used = read(1) else { return nil }
                        if used == 1 {
                            use.append(true)
                        } else {
                            guard let delta = read(1) else { return nil }
                            use.append(delta == 1)
                        }
                    }
                    let negativeCount = reference.negative.count
                    var negative: [Int] = [], positive: [Int] = []
                    for j in stride(from: reference.positive.count - 1, through: 0, by: -1) {
                        let poc = reference.positive[j] + deltaRps
                        if poc < 0 && use[negativeCount + j] { negative.append(poc) }
                    }
                    if deltaRps < 0 && use[count] { negative.append(deltaRps) }
                    for j in 0..<negativeCount {
                        let poc = reference.negative[j] + deltaRps
                        if poc < 0 && use[j] { negative.append(poc) }
                    }
                    for j in stride(from: negativeCount - 1, through: 0, by: -1) {
                        let poc = reference.negative[j] + deltaRps
                        if poc > 0 && use[j] { positive.append(poc) }
                    }
                    if deltaRps > 0 && use[count] { positive.append(deltaRps) }
                    for j in 0..<reference.positive.count {
                        let poc = reference.positive[j] + deltaRps
                        if poc > 0 && use[negativeCount + j] { positive.append(poc) }
                    }
                    guard negative.count <= 16, positive.count <= 16 else { return nil }
                    sets.append((negative, positive))
                } else {
                    guard let negativeCount = golomb(), negativeCount <= 16,
                        let positiveCount = golomb(), positiveCount <= 16
                    else { return nil }
                    var negative: [Int] = [], positive: [Int] = []
                    for _ in 0..<negativeCount {
                        guard let delta = golomb(), delta < 1 << 15, read(1) != nil else { return nil }
                        negative.append((negative.last ?? 0) - (delta + 1))
                    }
                    for _ in 0..<positiveCount {
                        guard let delta = golomb(), delta < 1 << 15, read(1) != nil else { return nil }
                        positive.append((positive.last ?? 0) + (delta + 1))
                    }
                    sets.append((negative, positive))
                }
            }
            guard let longTerm = read(1) else { return nil }
            if longTerm == 1 {
                guard let count = golomb(), count <= 32 else { return nil }
                for _ in 0..<count { guard read(pocBits + 4) != nil, read(1) != nil else { return nil } }
            }
            // sps_temporal_mvp_enabled_flag, strong_intra_smoothing_enabled_flag, vui_parameters_present_flag
            guard read(1) != nil, read(1) != nil, let vui = read(1) else { return nil }
            var described = Colour(primaries: 2, transfer: 2, matrix: 2, fullRange: false)
            if vui == 1 {
                guard let aspect = read(1) else { return nil }
                if aspect == 1 {
                    guard let idc = read(8) else { return nil }
                    if idc == 255 { guard read(16) != nil, read(16) != nil else { return nil } }
                }
                guard let overscan = read(1) else { return nil }
                if overscan == 1 { guard read(1) != nil else { return nil } }
                guard let signalType = read(1) else { return nil }
                if signalType == 1 {
                    guard read(3) != nil, let fullRange = read(1), let description = read(1) else { return nil }
                    described.fullRange = fullRange == 1
                    if description == 1 {
                        guard let primaries = read(8), let transfer = read(8), let matrix = read(8) else { return nil }
                        guard matrix < 11 else { return nil }
                        described.primaries = [0, 3].contains(primaries) || primaries >= 11 ? 2 : primaries
                        described.transfer = [0, 3].contains(transfer) || transfer >= 18 ? 2 : transfer
                        described.matrix = matrix
                    }
                }
            }
            return described
        }
        return (width, height, chroma, colour())
    }
}
