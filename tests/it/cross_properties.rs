//! What the meson cross file tells a build about its target is what the target's compiler
//! does: for every target, the `longdouble_format` and `endian` crosswheel writes (the
//! answers numpy 2.x reads instead of running a program) are checked by compiling
//! `static_assert`s with that target's zig wrapper. Needs zig (installed into crosswheel's
//! cache on first use) and, for the Linux targets' exe_wrapper, qemu-user.

use crate::common;

use std::process::Command;

/// Every target of config/targets.toml that is compiled itself (universal2 is its two
/// slices, each checked on its own).
fn targets() -> Vec<&'static str> {
    crosswheel::target::targets()
        .iter()
        .filter(|target| target.fuses.is_empty())
        .map(|target| target.id.as_str())
        .collect()
}

/// The size and mantissa digits (`LDBL_MANT_DIG`) of `long double` for each of numpy's
/// format names: what makes one format distinct from the others of its size.
fn long_double_layout(format: &str) -> (usize, u32) {
    match format {
        "IEEE_DOUBLE_LE" => (8, 53),
        "IEEE_QUAD_LE" => (16, 113),
        "IBM_DOUBLE_DOUBLE_LE" => (16, 106),
        "INTEL_EXTENDED_16_BYTES_LE" => (16, 64),
        "INTEL_EXTENDED_12_BYTES_LE" => (12, 64),
        "IEEE_QUAD_BE" => (16, 113),
        other => panic!("a format numpy does not know: {other}"),
    }
}

/// The value of `name = 'value'` in a cross file.
fn string_entry<'a>(cross_file: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name} = '");
    let line = cross_file
        .lines()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {name} in the cross file:\n{cross_file}"));
    line[prefix.len()..].trim_end_matches('\'')
}

#[test]
#[ignore = "slow: compiles with zig, runs under qemu"]
fn every_targets_cross_file_properties_match_its_compiler() {
    let python = common::distribution_python();
    let out = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for target in targets() {
        let env = common::zig_cross_env(&python, target);
        let cross_file = std::fs::read_to_string(&env.meson_cross_file).unwrap();
        let format = string_entry(&cross_file, "longdouble_format");
        let (size, digits) = long_double_layout(format);
        let order = match string_entry(&cross_file, "endian") {
            "little" => "__ORDER_LITTLE_ENDIAN__",
            "big" => "__ORDER_BIG_ENDIAN__",
            other => panic!("{target}: endian = '{other}'"),
        };
        let probe = out.path().join(format!("{target}.c"));
        std::fs::write(
            &probe,
            format!(
                "#include <float.h>\n\
                 _Static_assert(sizeof(long double) == {size}, \"sizeof(long double)\");\n\
                 _Static_assert(LDBL_MANT_DIG == {digits}, \"LDBL_MANT_DIG\");\n\
                 _Static_assert(__BYTE_ORDER__ == {order}, \"byte order\");\n"
            ),
        )
        .unwrap();
        let output = Command::new(common::c_compiler(&env))
            .arg("-c")
            .arg(&probe)
            .arg("-o")
            .arg(probe.with_extension("o"))
            .output()
            .unwrap();
        if !output.status.success() {
            failures.push(format!(
                "{target} (longdouble_format = '{format}'): {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        // A Linux target keeps running what it can run; macOS has no wrapper to run with.
        assert_eq!(
            cross_file.contains("\nexe_wrapper = "),
            !target.starts_with("macos"),
            "{target}:\n{cross_file}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
