//! Pillow 13.0.0 from its sdist with its own `[tool.cibuildwheel]` configuration, where a
//! user of crosswheel changes only what cannot work on a cross build: the before-all that
//! downloads and builds Pillow's libraries in the container becomes the package-manager
//! line a manylinux configuration would have (`yum install -y zlib-devel
//! libjpeg-turbo-devel libpng-devel freetype-devel`), which crosswheel reads as catalogue
//! libraries and builds for the target from Debian's sources; host paths are kept out
//! (`platform-guessing=disable`, as Pillow's macOS configuration has it). The repaired wheel
//! vendors libjpeg-turbo, libpng and freetype (zlib, a library of the manylinux policy, is
//! the system's, as with auditwheel) and, under qemu, opens and saves a JPEG and a PNG and
//! draws text with FreeType.
//!
//! Real parts: Pillow's sdist (tests/fixtures.lock), zlib, libjpeg-turbo (CMake), libpng and
//! freetype from Debian's orig tarballs, zig, qemu-user, Debian's CPython for aarch64.

use std::path::Path;
use std::process::Command;

use crate::common;

const PILLOW_CHECK: &str = r#"
import io
from PIL import Image, ImageDraw, ImageFont, features

for feature in ("jpg", "zlib", "freetype2"):
    assert features.check(feature), f"{feature} is not available"

image = Image.new("RGB", (64, 48), (200, 30, 40))
for form in ("JPEG", "PNG"):
    data = io.BytesIO()
    image.save(data, form)
    data.seek(0)
    back = Image.open(data)
    back.load()
    assert back.format == form and back.size == (64, 48), (form, back.format, back.size)
    red, green, blue = back.getpixel((10, 10))
    if form == "PNG":
        assert (red, green, blue) == (200, 30, 40), (red, green, blue)
    else:
        assert abs(red - 200) < 8 and abs(green - 30) < 8 and abs(blue - 40) < 8, (red, green, blue)

canvas = Image.new("L", (120, 40), 0)
ImageDraw.Draw(canvas).text((4, 4), "crosswheel", font=ImageFont.load_default(size=20), fill=255)
assert canvas.getbbox() is not None, "FreeType drew nothing"
print("pillow", features.version("pil"), "libjpeg-turbo", features.version("libjpeg_turbo"),
      "freetype", features.version("freetype2"), "zlib", features.version("zlib"))
"#;

#[test]
#[ignore = "slow: builds four C libraries and Pillow for aarch64, tests under qemu"]
fn pillow_builds_with_catalogue_libraries_and_reads_and_writes_jpeg_and_png_under_qemu() {
    let root = tempfile::tempdir().unwrap();
    let sdist = common::fixture("pillow-13.0.0.tar.gz");
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&sdist)
        .arg("-C")
        .arg(root.path())
        .status()
        .expect("tar runs");
    assert!(status.success(), "unpacking {}", sdist.display());
    let project = root.path().join("pillow-13.0.0");
    std::fs::write(project.join("check_pillow.py"), PILLOW_CHECK).unwrap();
    let out = root.path().join("out");
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(&project)
        .args(["--only", "cp311-manylinux_aarch64", "--require-tests", "-w"])
        .arg(&out)
        .env(
            "CIBW_BEFORE_ALL",
            "yum install -y zlib-devel libjpeg-turbo-devel libpng-devel freetype-devel",
        )
        .env(
            "CIBW_CONFIG_SETTINGS",
            "raqm=disable imagequant=disable platform-guessing=disable",
        )
        .env("CIBW_TEST_EXTRAS", "")
        .env("CIBW_TEST_REQUIRES", "")
        .env("CIBW_TEST_COMMAND", "python {project}/check_pillow.py")
        .output()
        .expect("crosswheel runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("pillow 13.0.0 libjpeg-turbo 2.1.5 freetype 2.12.1 zlib "),
        "the check under qemu must report the catalogue's libraries:\n{text}"
    );
    let wheel = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .unwrap_or_else(|| panic!("no wheel in {}:\n{text}", out.display()));
    // The vendored libraries need glibc 2.17 at most (zig links them against the policy's
    // glibc), and libz.so.1, a library of the manylinux policy taken from the system as
    // auditwheel takes it, is asked for ZLIB_1.2.3.4 only, which manylinux2014's zlib has:
    // the catalogue's libraries keep the wheel at manylinux2014 (the index's Pillow 13
    // aarch64 wheel is manylinux_2_27).
    assert!(
        file_name(&wheel)
            .ends_with("-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"),
        "{}",
        file_name(&wheel)
    );
    let listing = Command::new("unzip")
        .arg("-Z1")
        .arg(&wheel)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&listing.stdout);
    for library in ["libjpeg", "libpng16", "libfreetype"] {
        assert!(
            names
                .lines()
                .any(|name| name.starts_with("pillow.libs/") && name.contains(library)),
            "{library} is vendored into pillow.libs/:\n{names}"
        );
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}
