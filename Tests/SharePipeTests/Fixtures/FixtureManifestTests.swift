import Foundation
import Testing

/// TestImages/ is exactly what TestImages/MANIFEST.sha256 lists: every file with its SHA-256, none missing,
/// none unlisted. A changed fixture fails here until `scripts/fixtures/make-test-images --update-manifest` is run on
/// purpose (after `scripts/fixtures/make-test-images --compare <family>` has shown what the generator changed).
@Suite("Fixture manifest")
struct FixtureManifestTests {
    static let manifestName = "MANIFEST.sha256"

    /// The manifest's lines as path → hex digest.
    static func listed() throws -> [String: String] {
        let text = try String(contentsOfFile: Fixtures.path(manifestName), encoding: .utf8)
        var entries: [String: String] = [:]
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.isEmpty {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            try #require(
                parts.count == 3 && parts[0].count == 64 && parts[1].isEmpty,
                "\(manifestName):\(number + 1) is not '<sha256>  <path>': \(line)")
            #expect(
                entries.updateValue(String(parts[0]), forKey: String(parts[2])) == nil,
                "\(manifestName) lists \(parts[2]) twice")
        }
        return entries
    }

    /// Every regular file under TestImages/, relative, but the manifest itself.
    static func present() -> Set<String> {
        let root = Fixtures.path("")
        var found: Set<String> = []
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let relative = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + relative, isDirectory: &isDirectory),
                !isDirectory.boolValue,
                relative != manifestName
            {
                found.insert(relative)
            }
        }
        return found
    }

    @Test("SHA-256 matches the FIPS 180-4 examples")
    func knownDigests() {
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            SHA256.hex([UInt8](repeating: 0x61, count: 1_000))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test("every file under TestImages/ is listed with its checksum, and every listed file is there")
    func manifestMatchesTheTree() throws {
        let listed = try Self.listed()
        let present = Self.present()
        #expect(listed.count > 100, "the manifest lists \(listed.count) files")
        let regenerate = "(if the change is intended: scripts/fixtures/make-test-images --update-manifest)"
        for missing in Set(listed.keys).subtracting(present).sorted() {
            Issue.record("TestImages/\(missing) is listed in \(Self.manifestName) but missing \(regenerate)")
        }
        for unlisted in present.subtracting(listed.keys).sorted() {
            Issue.record("TestImages/\(unlisted) is not listed in \(Self.manifestName) \(regenerate)")
        }
        for (relative, digest) in listed.sorted(by: { $0.key < $1.key }) where present.contains(relative) {
            let actual = SHA256.hex(try Fixtures.bytes(Fixtures.path(relative)))
            #expect(
                actual == digest, "TestImages/\(relative) changed: sha256 \(actual), manifest \(digest) \(regenerate)")
        }
    }

    @Test("TOOLS.txt records the version of every tool the generator calls")
    func toolVersionsRecorded() throws {
        let text = try String(contentsOfFile: Fixtures.path("TOOLS.txt"), encoding: .utf8)
        for tool in [
            "ImageMagick", "exiftool", "cjpeg", "jpegtran", "heif-enc", "cwebp", "img2webp", "webpmux", "ffmpeg",
            "avifenc", "gifsicle", "python3",
        ] {
            let line = text.split(separator: "\n").first { $0.hasPrefix(tool + ": ") }
            #expect(line != nil && !line!.contains("not installed"), "TOOLS.txt has no version for \(tool)")
        }
    }
}
