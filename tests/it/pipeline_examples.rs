//! The meson-python and scikit-build-core examples go through the whole
//! pipeline like blasdot: cross-built with zig, repaired, then installed into a
//! real target CPython — under qemu-user, or natively for x86_64 — where their own
//! pytest suites run. Only wheels whose suites passed reach the wheelhouse, and the
//! reference auditor (`auditwheel show`) gives each the tag crosswheel gave it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::crosswheel_bin;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// Runs `crosswheel build` for the Linux identifiers of one example and returns
/// the wheel names in the wheelhouse and the run's stdout and stderr.
fn build_linux_wheels(name: &str) -> (Vec<String>, String, String) {
    build_for_archs(name, "manylinux_aarch64 manylinux_ppc64le").0
}

/// `crosswheel build` of one example's cp311 wheels for `archs`: the wheel names, stdout and
/// stderr, and the wheelhouse (kept until the caller drops it).
fn build_for_archs(name: &str, archs: &str) -> ((Vec<String>, String, String), tempfile::TempDir) {
    build_python(name, archs, "cp311")
}

/// As [`build_for_archs`], for another CPython than the examples' `python = ["cp311"]`.
fn build_python(
    name: &str,
    archs: &str,
    python: &str,
) -> ((Vec<String>, String, String), tempfile::TempDir) {
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(crosswheel_bin())
        .arg("build")
        .arg(example(name))
        .arg("-w")
        .arg(out.path())
        .args(["--archs", archs])
        .env("CROSSWHEEL_PYTHON", python)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "build of {name} failed:\n{stdout}\n{stderr}"
    );
    ((common::wheel_names_in(out.path()), stdout, stderr), out)
}

fn assert_suites_ran_under_emulation(stdout: &str, tests: usize) {
    for identifier in ["cp311-manylinux_aarch64", "cp311-manylinux_ppc64le"] {
        let row = stdout
            .lines()
            .find(|line| line.starts_with(identifier))
            .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}"));
        assert!(row.contains("passed (emulated)"), "{row}");
    }
    // pytest's own report, streamed from the emulated interpreter to stdout (as
    // cibuildwheel prints a test command's output): the suites really ran, every test of
    // each suite, once per architecture.
    let pytest_results: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains(" passed in "))
        .collect();
    assert_eq!(
        pytest_results.len(),
        2,
        "pytest's result lines missing:\n{stdout}"
    );
    assert!(
        pytest_results
            .iter()
            .all(|line| line.contains(&format!("{tests} passed"))),
        "{pytest_results:?}"
    );
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn meson_python_example_passes_its_suite_on_aarch64_and_ppc64le() {
    let (wheels, stdout, _) = build_linux_wheels("mesonproj");
    assert_eq!(
        wheels,
        [
            "mesonproj-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "mesonproj-0.1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        ]
    );
    assert_suites_ran_under_emulation(&stdout, 4);
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn scikit_build_core_example_passes_its_suite_on_aarch64_and_ppc64le() {
    let (wheels, stdout, _) = build_linux_wheels("cmakeproj");
    assert_eq!(
        wheels,
        [
            "cmakeproj-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "cmakeproj-0.1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        ]
    );
    assert_suites_ran_under_emulation(&stdout, 3);
}

/// One example on one Linux target: the `--archs` value, the wheel its cp311 build gets,
/// how the test stage runs it on this x86_64 machine, and how many tests its suite has.
struct LinuxCase {
    example: &'static str,
    arch: &'static str,
    /// The identifier's Python: `cp311`, or the version Debian ships for the architecture.
    python: &'static str,
    wheel: &'static str,
    runs: &'static str,
    tests: usize,
}

const LINUX_CASES: &[LinuxCase] = &[
    // zig's glibc 2.17 stubs; the symbols the extensions use are older still, so the tag
    // is the oldest x86_64 policy, as auditwheel judges it too.
    LinuxCase {
        example: "cmakeproj",
        arch: "x86_64",
        python: "cp311",
        wheel: "cmakeproj-0.1.0-cp311-cp311-manylinux_2_5_x86_64.manylinux1_x86_64.whl",
        runs: "passed (native)",
        tests: 3,
    },
    LinuxCase {
        example: "mesonproj",
        arch: "x86_64",
        python: "cp311",
        wheel: "mesonproj-0.1.0-cp311-cp311-manylinux_2_5_x86_64.manylinux1_x86_64.whl",
        runs: "passed (native)",
        tests: 4,
    },
    // Big-endian: Debian's s390x CPython under qemu-s390x.
    LinuxCase {
        example: "cmakeproj",
        arch: "s390x",
        python: "cp311",
        wheel: "cmakeproj-0.1.0-cp311-cp311-manylinux_2_17_s390x.manylinux2014_s390x.whl",
        runs: "passed (emulated)",
        tests: 3,
    },
    LinuxCase {
        example: "mesonproj",
        arch: "s390x",
        python: "cp311",
        wheel: "mesonproj-0.1.0-cp311-cp311-manylinux_2_17_s390x.manylinux2014_s390x.whl",
        runs: "passed (emulated)",
        tests: 4,
    },
    // 32-bit x86: Debian's i386 CPython under qemu-i386; i686's policies start at
    // manylinux_2_5 as x86_64's do.
    LinuxCase {
        example: "cmakeproj",
        arch: "i686",
        python: "cp311",
        wheel: "cmakeproj-0.1.0-cp311-cp311-manylinux_2_5_i686.manylinux1_i686.whl",
        runs: "passed (emulated)",
        tests: 3,
    },
    LinuxCase {
        example: "mesonproj",
        arch: "i686",
        python: "cp311",
        wheel: "mesonproj-0.1.0-cp311-cp311-manylinux_2_5_i686.manylinux1_i686.whl",
        runs: "passed (emulated)",
        tests: 4,
    },
    // Hard-float 32-bit Arm: Debian's armhf CPython under qemu-arm.
    LinuxCase {
        example: "cmakeproj",
        arch: "armv7l",
        python: "cp311",
        wheel: "cmakeproj-0.1.0-cp311-cp311-manylinux_2_17_armv7l.manylinux2014_armv7l.whl",
        runs: "passed (emulated)",
        tests: 3,
    },
    LinuxCase {
        example: "mesonproj",
        arch: "armv7l",
        python: "cp311",
        wheel: "mesonproj-0.1.0-cp311-cp311-manylinux_2_17_armv7l.manylinux2014_armv7l.whl",
        runs: "passed (emulated)",
        tests: 4,
    },
    // riscv64 starts at manylinux_2_31; Debian ships riscv64 from trixie, whose CPython
    // is 3.13, so these are cp313 builds (a cp311 one is built and reported not tested).
    LinuxCase {
        example: "cmakeproj",
        arch: "riscv64",
        python: "cp313",
        wheel: "cmakeproj-0.1.0-cp313-cp313-manylinux_2_31_riscv64.whl",
        runs: "passed (emulated)",
        tests: 3,
    },
    LinuxCase {
        example: "mesonproj",
        arch: "riscv64",
        python: "cp313",
        wheel: "mesonproj-0.1.0-cp313-cp313-manylinux_2_31_riscv64.whl",
        runs: "passed (emulated)",
        tests: 4,
    },
];

/// `auditwheel show --json`'s most compatible policy for a wheel (`manylinux_2_17_x86_64`).
fn auditwheel_tag(wheel: &Path) -> String {
    let output = Command::new("auditwheel")
        .args(["show", "--json"])
        .arg(wheel)
        .output()
        .unwrap_or_else(|err| {
            panic!("cannot run auditwheel ({err}): scripts/setup-test-env installs it")
        });
    assert!(
        output.status.success(),
        "auditwheel show {}: {}",
        wheel.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    json["overall_tag"]
        .as_str()
        .unwrap_or_else(|| panic!("no overall_tag in {json}"))
        .to_string()
}

/// Builds, repairs and tests `example` for one Linux architecture: the wheel's name, the
/// summary row and pytest's own result line say it passed there, and auditwheel agrees
/// with its tag.
fn passes_on(example: &str, arch: &str) {
    let case = LINUX_CASES
        .iter()
        .find(|case| case.example == example && case.arch == arch)
        .unwrap_or_else(|| panic!("no case for {example} on {arch}"));
    let started = std::time::Instant::now();
    // The identifier platform: `x86_64` alone would pick macOS x86_64 too.
    let python = case.python;
    let ((wheels, stdout, _), out) = build_python(example, &format!("manylinux_{arch}"), python);
    eprintln!(
        "{example} {python} {arch}: build + repair + test in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(wheels, [case.wheel]);
    let identifier = format!("{python}-manylinux_{arch}");
    let row = stdout
        .lines()
        .find(|line| line.starts_with(&identifier))
        .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}"));
    assert!(row.contains(case.runs), "{row}");
    let result = format!("{} passed in ", case.tests);
    assert!(
        stdout.lines().any(|line| line.contains(&result)),
        "pytest's result line missing:\n{stdout}"
    );
    let platform_tags = case
        .wheel
        .trim_end_matches(".whl")
        .rsplit('-')
        .next()
        .unwrap();
    let most_compatible = platform_tags.split('.').next().unwrap();
    let wheel = out.path().join(case.wheel);
    assert_eq!(auditwheel_tag(&wheel), most_compatible);
    // inspect and check know the platform too.
    for command in ["inspect", "check"] {
        let output = Command::new(crosswheel_bin())
            .arg(command)
            .arg(&wheel)
            .output()
            .expect("run crosswheel");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "crosswheel {command}: {printed}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        if command == "inspect" {
            assert!(
                printed.contains(&format!("policy: {most_compatible} ({platform_tags})")),
                "{printed}"
            );
        }
    }
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn scikit_build_core_example_passes_its_suite_on_x86_64_natively() {
    passes_on("cmakeproj", "x86_64");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn meson_python_example_passes_its_suite_on_x86_64_natively() {
    passes_on("mesonproj", "x86_64");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn scikit_build_core_example_passes_its_suite_on_s390x() {
    passes_on("cmakeproj", "s390x");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn meson_python_example_passes_its_suite_on_s390x() {
    passes_on("mesonproj", "s390x");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn scikit_build_core_example_passes_its_suite_on_i686() {
    passes_on("cmakeproj", "i686");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn meson_python_example_passes_its_suite_on_i686() {
    passes_on("mesonproj", "i686");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn scikit_build_core_example_passes_its_suite_on_armv7l() {
    passes_on("cmakeproj", "armv7l");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn meson_python_example_passes_its_suite_on_armv7l() {
    passes_on("mesonproj", "armv7l");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn scikit_build_core_example_passes_its_suite_on_riscv64() {
    passes_on("cmakeproj", "riscv64");
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn meson_python_example_passes_its_suite_on_riscv64() {
    passes_on("mesonproj", "riscv64");
}

/// musllinux: the scikit-build-core example built with zig's musl for x86_64 and aarch64.
/// Each wheel is repaired for `musllinux_1_2_<arch>` (musl's binaries cannot say their
/// policy: the target does), its extension needs musl's C library by the name musllinux
/// wheels use, `auditwheel show` gives the same tag, and the example's pytest suite passes
/// on the musl CPython crosswheel builds for the target, under qemu.
#[test]
#[ignore = "slow: zig builds of the example against musl (its C library and a musl CPython built once, ~3 min per architecture)"]
fn scikit_build_core_example_builds_musllinux_wheels_auditwheel_agrees_with() {
    let started = std::time::Instant::now();
    let ((wheels, stdout, _stderr), out) =
        build_for_archs("cmakeproj", "musllinux_x86_64 musllinux_aarch64");
    eprintln!(
        "cmakeproj cp311 musllinux x86_64 + aarch64: build + repair in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        wheels,
        [
            "cmakeproj-0.1.0-cp311-cp311-musllinux_1_2_aarch64.whl",
            "cmakeproj-0.1.0-cp311-cp311-musllinux_1_2_x86_64.whl",
        ]
    );
    for arch in ["x86_64", "aarch64"] {
        let tag = format!("musllinux_1_2_{arch}");
        let identifier = format!("cp311-musllinux_{arch}");
        let lines: Vec<&str> = stdout.lines().collect();
        let row = lines
            .iter()
            .position(|line| line.starts_with(&identifier))
            .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}"));
        assert!(lines[row].contains("passed (emulated)"), "{}", lines[row]);
        let wheel = out
            .path()
            .join(format!("cmakeproj-0.1.0-cp311-cp311-{tag}.whl"));
        assert_eq!(auditwheel_tag(&wheel), tag);
        let inspected = Command::new(crosswheel_bin())
            .arg("inspect")
            .arg(&wheel)
            .output()
            .expect("run crosswheel inspect");
        let printed = String::from_utf8_lossy(&inspected.stdout);
        assert!(
            printed.contains(&format!("policy: {tag} ({tag})")),
            "{printed}"
        );
        let mut archive =
            zip::ZipArchive::new(std::fs::File::open(&wheel).expect("open")).expect("zip");
        // CMake before 4.1 does not ask the target's sysconfig for the suffix in a cross
        // build, so the module may be plain `_gcd.so`; a suffix, if any, is musl's.
        let mut extension = None;
        for index in 0..archive.len() {
            let mut entry = archive.by_index(index).expect("entry");
            let name = entry.name().expect("UTF-8 entry name").into_owned();
            if name.starts_with("cmakeproj/_gcd") && name.ends_with(".so") {
                let musl_suffix = format!("cmakeproj/_gcd.cpython-311-{arch}-linux-musl.so");
                assert!(name == "cmakeproj/_gcd.so" || name == musl_suffix, "{name}");
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut bytes).expect("read");
                extension = Some((name, bytes));
            }
        }
        let (extension, bytes) =
            extension.unwrap_or_else(|| panic!("no cmakeproj/_gcd*.so in {}", wheel.display()));
        let facts = crosswheel::formats::elf::facts::ElfFacts::parse(&bytes).expect("ELF");
        // `_gcd` calls no C library function, so it needs nothing at all (the repair was
        // told its policy by the target, not by the binary); zig's `libc.so` never stays.
        let libc = format!("libc.musl-{arch}.so.1");
        assert!(
            facts.needed.iter().all(|name| *name == libc),
            "{extension} needs {:?}",
            facts.needed
        );
    }
}

/// Every target in one run (`archs = "all"`): the scikit-build-core example's 17 cp311
/// identifiers. Each Linux wheel runs the example's pytest suite: manylinux x86_64
/// natively, the others under qemu on Debian's CPython, riscv64's (Debian has no riscv64
/// CPython 3.11) and every musllinux one's on a CPython crosswheel builds for the target.
/// The macOS wheels get the static load check.
#[test]
#[ignore = "slow: 17 zig builds and 14 test runs under qemu (first run: the musl and riscv64 CPythons, ~2 min each)"]
fn scikit_build_core_example_builds_every_target_and_tests_every_linux_wheel() {
    let started = std::time::Instant::now();
    let ((wheels, stdout, _), _out) = build_for_archs("cmakeproj", "all");
    eprintln!(
        "cmakeproj cp311, 17 targets: build + repair + test in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(wheels.len(), 17, "{wheels:?}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("cp311-"))
        .collect();
    assert_eq!(rows.len(), 17, "{stdout}");
    for row in rows {
        let expected = if row.starts_with("cp311-macosx_") {
            "static check (not executed)"
        } else if row.starts_with("cp311-manylinux_x86_64") {
            "passed (native)"
        } else {
            "passed (emulated)"
        };
        assert!(row.contains(expected), "{row}");
    }
}
