//! The CPU options real builds pass reach zig as zig spells them: each flag numpy's
//! meson_cpu probes with (and the other spellings of config/targets.toml's
//! `[cpu_flags]`) compiles a file using the instructions it enables, through the real
//! wrapper; where the target's baseline lacks them, the same file without the flag does
//! not compile, so the flag is what made the difference. A flag the wrappers translate and
//! zig still refuses leaves an error for the build stage; host CPU names and `-mtune` are
//! dropped with a notice. Needs zig (installed into crosswheel's cache on first use).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use crosswheel::stages::toolchain::{WRAPPER_NOTES_VAR, wrapper_errors, wrapper_notices};

/// Compiles `source` with `flags` in `dir`, leaving notes in `notes`.
fn compile(cc: &Path, dir: &Path, notes: &Path, source: &str, flags: &[&str]) -> Output {
    std::fs::write(dir.join("probe.c"), source).unwrap();
    Command::new(cc)
        .args(flags)
        .args(["-c", "probe.c", "-o", "probe.o"])
        .current_dir(dir)
        .env(WRAPPER_NOTES_VAR, notes)
        .env_remove("CFLAGS")
        .output()
        .unwrap()
}

const NEON: &str = "#include <arm_neon.h>\n\
    float32x4_t f(float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); }\n";
const FP16: &str = "#include <arm_neon.h>\n\
    #ifndef __ARM_FEATURE_FP16_VECTOR_ARITHMETIC\n#error no fp16 arithmetic\n#endif\n\
    float16x8_t f(float16x8_t a, float16x8_t b) { return vaddq_f16(a, b); }\n";
const DOTPROD: &str = "#include <arm_neon.h>\n\
    uint32x4_t f(uint32x4_t a, uint8x16_t b, uint8x16_t c) { return vdotq_u32(a, b, c); }\n";
const FP16FML: &str = "#include <arm_neon.h>\n\
    float32x4_t f(float32x4_t a, float16x8_t b, float16x8_t c) { return vfmlalq_low_f16(a, b, c); }\n";
const SVE: &str = "#include <arm_sve.h>\n\
    svfloat32_t f(svbool_t p, svfloat32_t a, svfloat32_t b) { return svadd_f32_z(p, a, b); }\n";
const VSX: &str = "#include <altivec.h>\n\
    __vector double f(__vector double a, __vector double b) { return vec_add(a, b); }\n";
const POWER8: &str = "#include <altivec.h>\n\
    __vector unsigned long long f(__vector unsigned long long a) { return vec_popcnt(a); }\n";
const POWER9: &str = "#include <altivec.h>\n\
    #ifndef __POWER9_VECTOR__\n#error no power9 vector\n#endif\n\
    __vector unsigned int f(__vector unsigned int a, __vector unsigned int b) { return vec_absd(a, b); }\n";
const POWER10: &str = "#include <altivec.h>\n\
    #ifndef __POWER10_VECTOR__\n#error no power10 vector\n#endif\n\
    __vector unsigned long long f(__vector unsigned long long a) { return vec_pdep(a, a); }\n";

/// (target, flags, source, whether the target's baseline compiles the source without them)
const CASES: &[(&str, &[&str], &str, bool)] = &[
    ("linux-aarch64", &["-march=armv8-a+simd"], NEON, true),
    ("linux-aarch64", &["-march=armv8.2-a+fp16"], FP16, false),
    (
        "linux-aarch64",
        &["-march=armv8.2-a+dotprod"],
        DOTPROD,
        false,
    ),
    (
        "linux-aarch64",
        &["-march=armv8.2-a+fp16fml"],
        FP16FML,
        false,
    ),
    ("linux-aarch64", &["-march=armv8.2-a+sve"], SVE, false),
    (
        "linux-aarch64",
        &["-march=armv8.2-a+fp16+dotprod"],
        DOTPROD,
        false,
    ),
    ("linux-aarch64", &["-mcpu=neoverse-n1"], DOTPROD, false),
    // -mtune is only tuning: the architecture asked for stays.
    (
        "linux-aarch64",
        &["-march=armv8.2-a+dotprod", "-mtune=cortex-a53"],
        DOTPROD,
        false,
    ),
    ("macos-arm64", &["-march=armv8.2-a+fp16"], FP16, true),
    ("macos-arm64", &["-march=armv8.2-a+dotprod"], DOTPROD, true),
    ("macos-arm64", &["-march=armv8.2-a+fp16fml"], FP16FML, true),
    ("macos-arm64", &["-mcpu=apple-m1"], DOTPROD, true),
    // OpenBLAS's ARMV7 build: GCC's architecture name, with the FPU it asks for.
    (
        "linux-armv7l",
        &["-march=armv7-a", "-mfpu=neon"],
        NEON,
        true,
    ),
    ("linux-ppc64le", &["-mvsx", "-maltivec"], VSX, true),
    ("linux-ppc64le", &["-mcpu=power8"], POWER8, true),
    ("linux-ppc64le", &["-mcpu=power9"], POWER9, false),
    ("linux-ppc64le", &["-mcpu=power10"], POWER10, false),
];

#[test]
#[ignore = "slow: real zig compiles"]
fn every_cpu_flag_real_builds_pass_compiles_what_it_enables() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for &(target, flags, source, baseline_has_it) in CASES {
        let cc = common::zig_wrapper(target, false);
        let notes = tempfile::tempdir().unwrap();
        let with = compile(&cc, dir.path(), notes.path(), source, flags);
        if !with.status.success() {
            failures.push(format!(
                "{target} {flags:?}: {}",
                String::from_utf8_lossy(&with.stderr)
            ));
        }
        let without = compile(&cc, dir.path(), notes.path(), source, &[]);
        if without.status.success() != baseline_has_it {
            failures.push(format!(
                "{target}: without {flags:?} the probe {} compile",
                if baseline_has_it { "does not" } else { "does" }
            ));
        }
        assert_eq!(wrapper_errors(notes.path()), Vec::<String>::new());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "slow: real zig compiles"]
fn host_cpu_names_and_tuning_are_dropped_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    let cc = common::zig_wrapper("linux-aarch64", false);
    for flags in [
        &["-march=native"][..],
        &["-mcpu=native", "-mtune=cortex-a72"],
    ] {
        let output = compile(&cc, dir.path(), notes.path(), NEON, flags);
        assert!(
            output.status.success(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert_eq!(
        wrapper_notices(notes.path()),
        [
            "linux-aarch64: -mcpu=native dropped: it names the build machine's CPU, not the target's",
            "linux-aarch64: -mtune=cortex-a72 dropped: zig would build for that CPU instead of only tuning for it",
        ]
    );
}

#[test]
#[ignore = "slow: real zig compiles"]
fn a_translated_flag_zig_refuses_is_an_error_for_the_build_not_a_missing_feature() {
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    let cc = common::zig_wrapper("linux-aarch64", false);
    let output = compile(
        &cc,
        dir.path(),
        notes.path(),
        NEON,
        &["-march=armv8.2-a+bogus"],
    );
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown CPU feature: 'bogus'"));
    assert_eq!(
        wrapper_errors(notes.path()),
        [
            "linux-aarch64: zig refused the CPU options crosswheel's compiler wrapper translated \
          (-march=armv8.2-a+bogus -> -mcpu=generic+v8_2a+bogus: error: unknown CPU feature: 'bogus'), \
          so the build's CPU feature probes cannot be trusted: please report this to crosswheel"
        ]
    );
    // An x86 name on aarch64 is the project's mistake, as with gcc: a plain failure.
    let notes = tempfile::tempdir().unwrap();
    let output = compile(&cc, dir.path(), notes.path(), NEON, &["-march=haswell"]);
    assert!(!output.status.success());
    assert_eq!(wrapper_errors(notes.path()), Vec::<String>::new());
}

#[test]
#[ignore = "slow: real zig compiles"]
fn sve_is_refused_for_macos_as_no_apple_cpu_has_it_and_kept_for_linux() {
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    let macos = common::zig_wrapper("macos-arm64", false);
    // numpy's SVE probe: zig's clang would compile it for aarch64-macos, and the wheel
    // would carry a dispatch target the index's wheel (Apple's toolchain) does not.
    for flags in [&["-march=armv8.2-a+sve"][..], &["-march=armv9-a+sve2"]] {
        let output = compile(&macos, dir.path(), notes.path(), SVE, flags);
        assert!(!output.status.success(), "{flags:?} compiled for macOS");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("macos-arm64: ") && stderr.contains(": no Apple CPU has sve"),
            "{stderr}"
        );
    }
    // A refusal by design, not by zig: nothing for the build stage to report.
    assert_eq!(wrapper_errors(notes.path()), Vec::<String>::new());
    // Turning it off stays harmless, and the other features of the same probe pass.
    let output = compile(
        &macos,
        dir.path(),
        notes.path(),
        DOTPROD,
        &["-march=armv8.2-a+dotprod+nosve"],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
