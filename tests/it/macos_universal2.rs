//! macOS x86_64 and universal2: the fat writer against files Apple's lipo wrote, `crosswheel
//! fuse` on two real thin builds of one module, and examples/cmakeproj built with zig for
//! `cp311-macosx_x86_64` and `cp311-macosx_universal2`, every slice signed and passing the
//! static load check.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use crate::common::crosswheel_bin;
use crosswheel::analysis::loadcheck::check_macos_wheel;
use crosswheel::formats::macho::{
    Arch, MachOFile, SignatureStatus, fuse_slices, thin_slice, verify_signature,
};
use crosswheel::formats::wheel::WheelArchive;

const DELOCATE: &str = "delocate-0.13.0.tar.gz";
const PYZMQ: &str = "pyzmq-27.3.0-cp311-cp311-macosx_10_15_universal2.whl";

fn delocate_data() -> BTreeMap<String, Vec<u8>> {
    common::sdist_members(DELOCATE, "delocate/tests/data")
}

/// `(offset, align)` of each slice in the fat header, in header order.
fn fat_layout(data: &[u8]) -> Vec<(u32, u32)> {
    let word = |at: usize| u32::from_be_bytes(data[at..at + 4].try_into().unwrap());
    assert_eq!(word(0), 0xcafe_babe, "not a universal file");
    (0..word(4) as usize)
        .map(|index| (word(8 + index * 20 + 8), word(8 + index * 20 + 16)))
        .collect()
}

/// Thinning a universal file Apple's lipo wrote and fusing its slices again gives its
/// bytes back: same order, same alignments (2^14 for both slices, as lipo derives them
/// from the segments), same zero padding.
#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn fusing_the_slices_of_lipos_universal_files_gives_them_back_byte_for_byte() {
    let data = delocate_data();
    let mut files: Vec<(String, Vec<u8>)> = ["liba_both.dylib", "libextfunc.dylib"]
        .iter()
        .map(|name| (name.to_string(), data[*name].clone()))
        .collect();
    let pyzmq = WheelArchive::open(common::fixture(PYZMQ)).expect("pyzmq fixture");
    for name in [
        "zmq/.dylibs/libzmq.5.dylib",
        "zmq/backend/cython/_zmq.cpython-311-darwin.so",
    ] {
        files.push((name.to_string(), pyzmq.read(name).expect("member")));
    }
    for (name, original) in files {
        let x86_64 = thin_slice(&original, Arch::X86_64).unwrap();
        let arm64 = thin_slice(&original, Arch::Arm64).unwrap();
        // The arm64 slice given first still goes last, as lipo places it.
        let fused = fuse_slices(&[&arm64, &x86_64]).unwrap();
        assert_eq!(fat_layout(&fused), fat_layout(&original), "{name}");
        assert!(
            fat_layout(&fused).iter().all(|&(_, align)| align == 14),
            "{name}"
        );
        assert!(fused == original, "{name}: fused bytes differ from lipo's");
    }
}

fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(crosswheel_bin())
        .args(args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run crosswheel")
}

/// A wheel of `np` at `tag` holding numpy 1.24.1's `_sfc64` module built for one
/// architecture (delocate's test data) and a Python file.
fn thin_wheel(dir: &Path, version: &str, tag: &str, module: &[u8], init: &[u8]) -> PathBuf {
    let mut files: Vec<(String, Vec<u8>)> = common::minimal_metadata("np", version, tag);
    files.push(("np/__init__.py".into(), init.to_vec()));
    files.push(("np/_sfc64.cpython-311-darwin.so".into(), module.to_vec()));
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(name, data)| (name.as_str(), data.as_slice()))
        .collect();
    let platform = tag.rsplit('-').next().unwrap();
    common::make_wheel(
        dir,
        &format!("np-{version}-cp311-cp311-{platform}.whl"),
        &borrowed,
    )
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn fuse_makes_a_universal2_wheel_of_two_thin_builds_and_refuses_mismatched_ones() {
    let data = delocate_data();
    let intel_module = &data["np-1.24.1_x86_64_random__sfc64.cpython-311-darwin.so"];
    let arm_module = &data["np-1.24.1_arm_random__sfc64.cpython-311-darwin.so"];
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    let intel = thin_wheel(
        &inputs,
        "1.0",
        "cp311-cp311-macosx_10_9_x86_64",
        intel_module,
        b"",
    );
    let arm = thin_wheel(
        &inputs,
        "1.0",
        "cp311-cp311-macosx_11_0_arm64",
        arm_module,
        b"",
    );
    let before = (std::fs::read(&intel).unwrap(), std::fs::read(&arm).unwrap());

    let out = run(
        &[
            "fuse",
            &intel.to_string_lossy(),
            &arm.to_string_lossy(),
            "-w",
            "out",
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        before,
        (std::fs::read(&intel).unwrap(), std::fs::read(&arm).unwrap())
    );
    // delocate's tag: the x86_64 floor, arm64 implicitly at 11.0.
    let fused = dir
        .path()
        .join("out/np-1.0-cp311-cp311-macosx_10_9_universal2.whl");
    let wheel = WheelArchive::open(&fused).expect("the fused wheel");
    let module = wheel.read("np/_sfc64.cpython-311-darwin.so").unwrap();
    let file = MachOFile::parse(&module).unwrap();
    let arches: Vec<Arch> = file.slices.iter().map(|slice| slice.arch).collect();
    assert_eq!(arches, [Arch::X86_64, Arch::Arm64]);
    for slice in &file.slices {
        assert!(
            matches!(verify_signature(slice), SignatureStatus::Valid { .. }),
            "{} slice: {:?}",
            slice.arch,
            verify_signature(slice)
        );
    }
    let report = check_macos_wheel(&wheel).unwrap();
    assert!(report.passed(), "{report}");

    let refused = |first: &Path, second: &Path| {
        let out = run(
            &[
                "fuse",
                &first.to_string_lossy(),
                &second.to_string_lossy(),
                "-w",
                "bad",
            ],
            dir.path(),
        );
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            !dir.path().join("bad").exists()
                || common::wheel_names_in(&dir.path().join("bad")).is_empty()
        );
        stderr
    };
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let newer = thin_wheel(
        &other,
        "1.1",
        "cp311-cp311-macosx_11_0_arm64",
        arm_module,
        b"",
    );
    assert!(refused(&intel, &newer).contains("version 1.0 and 1.1"));
    let edited = thin_wheel(
        &other,
        "1.0",
        "cp311-cp311-macosx_11_0_arm64",
        arm_module,
        b"x = 1\n",
    );
    assert!(refused(&intel, &edited).contains("np/__init__.py differs between the wheels"));
    let another_intel = thin_slice(&data["liba_both.dylib"], Arch::X86_64).unwrap();
    let twice = thin_wheel(
        &other,
        "1.0",
        "cp311-cp311-macosx_11_0_x86_64",
        &another_intel,
        b"",
    );
    assert!(refused(&intel, &twice).contains("two x86_64 slices"));
    let same = thin_wheel(
        &other,
        "1.0",
        "cp311-cp311-macosx_10_9_x86_64",
        intel_module,
        b"",
    );
    assert!(refused(&intel, &same).contains("holds only x86_64 after fusing"));
    let mut files = common::minimal_metadata("np", "1.0", "cp311-cp311-macosx_11_0_arm64");
    files.push(("np/__init__.py".into(), Vec::new()));
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    let third = dir.path().join("third");
    std::fs::create_dir_all(&third).unwrap();
    let without = common::make_wheel(
        &third,
        "np-1.0-cp311-cp311-macosx_11_0_arm64.whl",
        &borrowed,
    );
    assert!(refused(&intel, &without).contains(
        "np/_sfc64.cpython-311-darwin.so is in np-1.0-cp311-cp311-macosx_10_9_x86_64.whl only"
    ));
}

/// Every Mach-O of `wheel`: its architectures, each slice's signature valid and minos.
/// `delocate-merge A B -w DIR`, as a configuration's repair command writes it, is
/// crosswheel's fuse under delocate's program name; without `-w` the merged wheel goes
/// beside the first wheel, as delocate-merge puts it.
#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn delocate_merge_is_answered_by_the_fuse_with_delocates_flags_and_default_folder() {
    let data = delocate_data();
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    let intel = thin_wheel(
        &inputs,
        "1.0",
        "cp311-cp311-macosx_10_9_x86_64",
        &data["np-1.24.1_x86_64_random__sfc64.cpython-311-darwin.so"],
        b"",
    );
    let arm = thin_wheel(
        &inputs,
        "1.0",
        "cp311-cp311-macosx_11_0_arm64",
        &data["np-1.24.1_arm_random__sfc64.cpython-311-darwin.so"],
        b"",
    );
    let peer = dir.path().join("delocate-merge");
    std::os::unix::fs::symlink(crosswheel_bin(), &peer).unwrap();
    let merged_name = "np-1.0-cp311-cp311-macosx_10_9_universal2.whl";
    for (args, folder) in [
        (vec!["-w", "out"], dir.path().join("out")),
        (vec!["-v"], inputs.clone()),
    ] {
        let output = Command::new(&peer)
            .arg(&intel)
            .arg(&arm)
            .args(&args)
            .current_dir(dir.path())
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .output()
            .expect("run delocate-merge");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?}: {stderr}");
        let wheel = WheelArchive::open(folder.join(merged_name)).expect("the merged wheel");
        let module = wheel.read("np/_sfc64.cpython-311-darwin.so").unwrap();
        let arches: Vec<Arch> = MachOFile::parse(&module)
            .unwrap()
            .slices
            .iter()
            .map(|slice| slice.arch)
            .collect();
        assert_eq!(arches, [Arch::X86_64, Arch::Arm64], "{args:?}");
    }
    let refused = Command::new(&peer)
        .arg(&intel)
        .current_dir(dir.path())
        .output()
        .expect("run delocate-merge");
    assert!(!refused.status.success());
}

fn slices_of(wheel: &WheelArchive) -> Vec<(String, Vec<(Arch, String)>)> {
    let mut found = Vec::new();
    for entry in wheel.entries() {
        let data = wheel.read(&entry.name).unwrap();
        if !crosswheel::formats::macho::is_macho(&data) {
            continue;
        }
        let file = MachOFile::parse(&data).unwrap();
        let mut slices = Vec::new();
        for slice in &file.slices {
            assert!(
                matches!(
                    verify_signature(slice),
                    SignatureStatus::Valid { adhoc: true, .. }
                ),
                "{} ({}): {:?}",
                entry.name,
                slice.arch,
                verify_signature(slice)
            );
            let minos = slice
                .deployment_target
                .map(|t| t.minos.to_string())
                .unwrap_or_default();
            slices.push((slice.arch, minos));
        }
        found.push((entry.name.clone(), slices));
    }
    found
}

/// Slow: two real zig builds of the scikit-build-core example, one of them twice (a slice
/// each), repaired, fused and checked.
#[test]
#[ignore = "slow: real zig builds of two slices"]
fn cmakeproj_builds_for_macos_x86_64_and_universal2_with_every_slice_signed() {
    let out = tempfile::tempdir().unwrap();
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cmakeproj");
    let mut command = Command::new(crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(&project)
        .arg("-w")
        .arg(out.path())
        .args(["--archs", "x86_64 universal2"])
        .env("CROSSWHEEL_PLATFORM", "macos")
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        common::wheel_names_in(out.path()),
        [
            "cmakeproj-0.1.0-cp311-cp311-macosx_10_13_universal2.whl",
            "cmakeproj-0.1.0-cp311-cp311-macosx_10_13_x86_64.whl",
        ]
    );
    for identifier in ["cp311-macosx_x86_64", "cp311-macosx_universal2"] {
        let row = stdout
            .lines()
            .find(|line| line.starts_with(identifier))
            .unwrap_or_else(|| panic!("no row for {identifier}:\n{stdout}"));
        assert!(row.contains("static check (not executed)"), "{row}");
    }
    let module = "cmakeproj/_gcd.cpython-311-darwin.so";
    let intel = WheelArchive::open(
        out.path()
            .join("cmakeproj-0.1.0-cp311-cp311-macosx_10_13_x86_64.whl"),
    )
    .unwrap();
    assert_eq!(
        slices_of(&intel),
        [(
            module.to_string(),
            vec![(Arch::X86_64, "10.13".to_string())]
        )]
    );
    let universal2 = WheelArchive::open(
        out.path()
            .join("cmakeproj-0.1.0-cp311-cp311-macosx_10_13_universal2.whl"),
    )
    .unwrap();
    assert_eq!(
        slices_of(&universal2),
        [(
            module.to_string(),
            vec![
                (Arch::X86_64, "10.13".to_string()),
                (Arch::Arm64, "11.0".to_string())
            ]
        )]
    );
    // The universal2 wheel's x86_64 slice is the x86_64 build's binary.
    assert_eq!(
        thin_slice(&universal2.read(module).unwrap(), Arch::X86_64).unwrap(),
        intel.read(module).unwrap()
    );
    for wheel in [&intel, &universal2] {
        let report = check_macos_wheel(wheel).unwrap();
        assert!(report.passed(), "{report}");
    }
}

/// Slow: blasdot links OpenBLAS from the target's scipy-openblas32 wheel; each slice's
/// repair vendors its own architecture's copy, and the fused wheel holds one universal
/// `libscipy_openblas.dylib`, both slices signed, its SBOM hash that of the fused file.
#[test]
#[ignore = "slow: real zig builds and a scipy-openblas wheel from the index"]
fn blasdot_universal2_vendors_openblas_with_both_slices() {
    let out = tempfile::tempdir().unwrap();
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot");
    let mut command = Command::new(crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(&project)
        .args(["--only", "cp311-macosx_universal2", "-w"])
        .arg(out.path())
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run crosswheel build");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let name = "blasdot-0.1.0-cp311-cp311-macosx_10_13_universal2.whl";
    assert_eq!(common::wheel_names_in(out.path()), [name]);
    let wheel = WheelArchive::open(out.path().join(name)).unwrap();
    let binaries = slices_of(&wheel);
    let paths: Vec<&str> = binaries.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "blasdot/.dylibs/libscipy_openblas.dylib",
            "blasdot/_core.cpython-311-darwin.so"
        ]
    );
    for (path, slices) in &binaries {
        let arches: Vec<Arch> = slices.iter().map(|(arch, _)| *arch).collect();
        assert_eq!(arches, [Arch::X86_64, Arch::Arm64], "{path}");
    }
    let report = check_macos_wheel(&wheel).unwrap();
    assert!(report.passed(), "{report}");
    let check = Command::new(crosswheel_bin())
        .arg("check")
        .arg(out.path().join(name))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}
