/// The standard policy with GIF's differences:
/// - `all` also drops the ICC profile application extension ("ICCRGBG1012"): the GIF rule is to strip XMP
///   and ICC application extensions along with comments (browsers ignore ICC in GIF anyway). Still images in
///   other formats keep their profile.
/// - `gps` also drops application extensions that carry IPTC or Photoshop resources (ImageMagick's
///   "MGKIPTC0000" / "MGK8BIM0000"), which can hold a location just like XMP.
/// - `none` keeps every comment and application extension.
/// The NETSCAPE2.0 loop extension is not metadata: it is a container property and always kept.
struct GIFMetadataPolicy: MetadataPolicy {
    static let locationCarryingApplications = ["MGKIPTC0000", "MGK8BIM0000"]

    func outcome(for info: ImageInfo, mode: StripMode) -> MetadataOutcome {
        var outcome = StandardMetadataPolicy().outcome(for: info, mode: mode)
        switch mode {
        case .all:
            outcome.kept.removeAll { $0.kind == .icc }
        case .gps:
            outcome.kept.removeAll { block in
                guard case .other(let tag, _) = block else { return false }
                return Self.locationCarryingApplications.contains { tag.hasSuffix(":" + $0) }
            }
        case .none:
            break
        }
        outcome.removed = info.metadataKinds.subtracting(MetadataOutcome.kinds(of: outcome.kept))
        return outcome
    }
}
