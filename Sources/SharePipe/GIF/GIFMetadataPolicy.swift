/// GIF's metadata policy: the standard policy (`StandardMetadataPolicy`), the same on every route a GIF
/// takes (still, animated, converted to PNG or JPEG), with one addition:
/// - `all` keeps only colour: the ICC profile application extension ("ICCRGBG1012") stays, written back
///   as that extension in a GIF, as iCCP in a PNG and as APP2 in a JPEG; comments, XMP and every other
///   application extension go.
/// - `gps` also drops application extensions that carry IPTC or Photoshop resources (ImageMagick's
///   "MGKIPTC0000" / "MGK8BIM0000"), which can hold a location like XMP (dropped as in every format);
///   comments stay, as JPEG's COM does.
/// - `none` keeps every comment and application extension.
/// The NETSCAPE2.0 loop extension is not metadata: it is a container property and always kept.
struct GIFMetadataPolicy: MetadataPolicy {
    static let locationCarryingApplications = ["MGKIPTC0000", "MGK8BIM0000"]

    func outcome(for info: ImageInfo, mode: StripMode) -> MetadataOutcome {
        var outcome = StandardMetadataPolicy().outcome(for: info, mode: mode)
        guard mode == .gps else { return outcome }
        outcome.kept.removeAll { block in
            guard case .other(let tag, _) = block else { return false }
            return Self.locationCarryingApplications.contains { tag.hasSuffix(":" + $0) }
        }
        outcome.removed = info.metadataKinds.subtracting(MetadataOutcome.kinds(of: outcome.kept))
        return outcome
    }
}
