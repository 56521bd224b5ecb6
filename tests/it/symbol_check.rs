//! Every import of a repaired Linux wheel resolves where the wheel will load, at a
//! version its tag allows — beyond auditwheel, which judges symbol versions only.
//!
//! The binaries are real ppc64le builds: with zig as it is (`-mabi=ibmlongdouble` leaves
//! libgcc's IBM double-double helpers undefined, which broke `import numpy.fft`), with
//! crosswheel's own wrapper (which links them from the target's libgcc), code built for
//! IEEE quad `long double` (whose printing needs glibc 2.32's `__*ieee128` functions), and
//! C++ on GCC's libstdc++ for IBM double-double, which crosswheel links in place of zig's
//! IEEE-quad libc++.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crosswheel::support::host::Cache;

const LONG_DOUBLE_SOURCE: &str = "long double scale(long double a, long double b) \
    { return a * b + a / b - (long double)(long long)a; }\n\
    long long truncated(long double x) { return (long long)x; }\n";

/// printf of a `long double` built for IEEE quad: glibc's headers send it to
/// `__snprintfieee128`, which glibc has only since 2.32.
const IEEE_QUAD_SOURCE: &str = "#include <stdio.h>\n\
    int digits(long double x) { char s[64]; return snprintf(s, sizeof s, \"%Lg\", x); }\n";

/// What zig's libc++ could not do for IBM double-double: print a `long double` through
/// iostreams and `std::to_string`, and throw and catch across the C++ library.
const CXX_SOURCE: &str = "#include <sstream>\n#include <stdexcept>\n#include <string>\n\
    extern \"C\" const char* show(long double x) {\n\
      static std::string kept; std::ostringstream out; out.precision(25);\n\
      out << x << ' ' << std::to_string(x);\n\
      try { throw std::runtime_error(\"thrown\"); } catch (const std::exception& e) { out << ' ' << e.what(); }\n\
      kept = out.str(); return kept.c_str(); }\n";

fn run_ok(program: &Path, args: &[&str], dir: &Path) -> Output {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("CFLAGS")
        .env_remove("LDFLAGS")
        .output()
        .unwrap_or_else(|err| panic!("{}: {err}", program.display()));
    assert!(
        output.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A cp311 ppc64le wheel holding `library` as its extension module.
fn wheel_with(dir: &Path, library: &[u8]) -> PathBuf {
    let mut files: Vec<(String, Vec<u8>)> =
        common::minimal_metadata("ldbl", "1.0", "cp311-cp311-linux_ppc64le");
    files.push((
        "ldbl/_ext.cpython-311-powerpc64le-linux-gnu.so".into(),
        library.to_vec(),
    ));
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(name, data)| (name.as_str(), data.as_slice()))
        .collect();
    common::make_wheel(dir, "ldbl-1.0-cp311-cp311-linux_ppc64le.whl", &borrowed)
}

fn crosswheel(args: &[&Path]) -> Output {
    Command::new(common::crosswheel_bin())
        .args(args)
        .output()
        .expect("crosswheel runs")
}

fn repair(wheel: &Path, out: &Path) -> Output {
    crosswheel(&["repair".as_ref(), wheel, "-w".as_ref(), out])
}

/// What `program` (in `dir`) prints on stdout under qemu on the target's Debian C library
/// and compiler runtimes.
fn stdout_under_qemu(dir: &Path, program: &str) -> String {
    let cache = Cache::from_env().unwrap();
    let root = crosswheel::support::sysroot::system_libraries(
        cache.root(),
        crosswheel::target::LinuxArch::Ppc64le,
        &crosswheel::support::host::Network::default(),
    )
    .unwrap();
    let qemu = common::require_tool("qemu-ppc64le-static", "apt-get install qemu-user-static");
    let output = Command::new(qemu)
        .arg("-L")
        .arg(&root)
        .arg(program)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The names of the wheels `crosswheel repair` makes of a wheel holding `library`.
fn repaired_names(dir: &Path, library: &[u8]) -> Vec<String> {
    let wheel = wheel_with(dir, library);
    let out = dir.join("out");
    let repaired = repair(&wheel, &out);
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stderr)
    );
    common::wheel_names_in(&out)
}

#[test]
#[ignore = "slow: zig ppc64le builds run under qemu"]
fn a_helper_no_loaded_library_defines_keeps_the_wheel_from_being_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ldbl.c"), LONG_DOUBLE_SOURCE).unwrap();
    // zig as crosswheel used to call it: the IBM long double ABI without libgcc.
    let zig = common::require_tool("python-zig", "pip install ziglang");
    let args = [
        "cc",
        "-target",
        "powerpc64le-linux-gnu.2.19",
        "-O2",
        "-mabi=ibmlongdouble",
        "-shared",
        "-fPIC",
        "ldbl.c",
        "-o",
        "ldbl.so",
    ];
    run_ok(&zig, &args, dir.path());
    let wheel = wheel_with(
        dir.path(),
        &std::fs::read(dir.path().join("ldbl.so")).unwrap(),
    );
    let out = dir.path().join("out");

    let output = repair(&wheel, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "repair passed: {stderr}");
    assert!(
        stderr.contains("ldbl/_ext.cpython-311-powerpc64le-linux-gnu.so imports __")
            && stderr.contains("which none of the libraries it loads defines (libc.so.6")
            && stderr.contains("the wheel would fail to import"),
        "{stderr}"
    );
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        common::wheel_names_in(&out).is_empty(),
        "a wheel was written"
    );

    let inspect = crosswheel(&["inspect".as_ref(), &wheel]);
    let report = String::from_utf8_lossy(&inspect.stdout);
    for helper in ["__gcc_qmul", "__gcc_qdiv", "__fixtfdi", "__floatditf"] {
        assert!(
            report.contains(&format!(
                "unresolved: ldbl/_ext.cpython-311-powerpc64le-linux-gnu.so imports {helper},"
            )),
            "{report}"
        );
    }
}

#[test]
#[ignore = "slow: zig ppc64le builds run under qemu"]
fn crosswheels_ppc64le_wrapper_links_the_ibm_long_double_helpers_from_libgcc() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ldbl.c"), LONG_DOUBLE_SOURCE).unwrap();
    std::fs::write(
        dir.path().join("main.c"),
        "#include <stdio.h>\nlong double scale(long double, long double);\n\
         long long truncated(long double);\n\
         int main(void) { long double x = scale(3.0L, 7.0L);\n\
         printf(\"%.25Lg %lld\\n\", x, truncated(x * 1e10L)); return 0; }\n",
    )
    .unwrap();
    let cc = common::zig_wrapper("linux-ppc64le", false);
    run_ok(
        &cc,
        &["-shared", "-fPIC", "ldbl.c", "-o", "libldbl.so"],
        dir.path(),
    );
    run_ok(
        &cc,
        &["main.c", "libldbl.so", "-Wl,-rpath,$ORIGIN", "-o", "main"],
        dir.path(),
    );
    let library = std::fs::read(dir.path().join("libldbl.so")).unwrap();
    let facts = crosswheel::formats::elf::facts::ElfFacts::parse(&library).unwrap();
    let undefined: Vec<&str> = facts
        .undefined_symbols
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert!(
        !undefined
            .iter()
            .any(|name| name.starts_with("__gcc_q") || name.contains("tf")),
        "{undefined:?}"
    );

    // The helpers compute what GCC's own build computes: 3*7 + 3/7 - 3 in IBM
    // double-double precision (31 significant digits, not double's 17).
    assert_eq!(
        stdout_under_qemu(dir.path(), "./main"),
        "18.42857142857142857142857 184285714285\n"
    );
    assert_eq!(
        repaired_names(dir.path(), &library),
        ["ldbl-1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl"]
    );
}

#[test]
#[ignore = "slow: zig ppc64le builds run under qemu"]
fn an_unversioned_glibc_import_tags_the_wheel_with_the_glibc_that_has_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("digits.c"), IEEE_QUAD_SOURCE).unwrap();
    run_ok(
        &common::zig_wrapper("linux-ppc64le", false),
        &[
            "-shared",
            "-fPIC",
            "-mabi=ieeelongdouble",
            "digits.c",
            "-o",
            "digits.so",
        ],
        dir.path(),
    );
    let wheel = wheel_with(
        dir.path(),
        &std::fs::read(dir.path().join("digits.so")).unwrap(),
    );

    let inspect = crosswheel(&["inspect".as_ref(), &wheel]);
    let report = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        report.contains(
            "UNVERSIONED __snprintfieee128 (from libc.so.6, which has it only since GLIBC_2.32)"
        ),
        "{report}"
    );
    assert!(
        report.contains(
            "__snprintfieee128 without a version, which libc.so.6 has only since GLIBC_2.32"
        ),
        "{report}"
    );

    let out = dir.path().join("out");
    let repaired = repair(&wheel, &out);
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stderr)
    );
    // Not manylinux_2_17: a glibc older than 2.32 has no __snprintfieee128, and 2.34 is
    // the first policy after 2.31.
    assert_eq!(
        common::wheel_names_in(&out),
        ["ldbl-1.0-cp311-cp311-manylinux_2_34_ppc64le.whl"]
    );
}

#[test]
#[ignore = "slow: zig ppc64le builds run under qemu"]
fn cxx_on_ppc64le_prints_ibm_long_double_and_needs_nothing_past_manylinux2014() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("show.cpp"), CXX_SOURCE).unwrap();
    std::fs::write(
        dir.path().join("main.c"),
        "#include <dlfcn.h>\n#include <stdio.h>\n\
         int main(void) { void *h = dlopen(\"./show.so\", RTLD_NOW | RTLD_LOCAL);\n\
         if (!h) { puts(dlerror()); return 1; }\n\
         const char *(*show)(long double) = (const char *(*)(long double))dlsym(h, \"show\");\n\
         puts(show(129.0L / 7.0L)); return 0; }\n",
    )
    .unwrap();
    // setuptools compiles C++ with CC and links it with CXX: both drivers take part.
    let cc = common::zig_wrapper("linux-ppc64le", false);
    run_ok(
        &cc,
        &["-fPIC", "-c", "show.cpp", "-o", "show.o"],
        dir.path(),
    );
    run_ok(
        &common::zig_wrapper("linux-ppc64le", true),
        &["-shared", "show.o", "-o", "show.so"],
        dir.path(),
    );
    run_ok(&cc, &["main.c", "-ldl", "-o", "main"], dir.path());

    let library = std::fs::read(dir.path().join("show.so")).unwrap();
    let facts = crosswheel::formats::elf::facts::ElfFacts::parse(&library).unwrap();
    let versions = facts.versions_by_prefix();
    assert!(
        !versions.contains_key("GLIBCXX") && !versions.contains_key("CXXABI"),
        "the C++ library is linked in, not imported: {versions:?}"
    );
    assert!(
        !facts.needed.iter().any(|needed| needed.contains("c++")),
        "{:?}",
        facts.needed
    );
    let exported: Vec<String> = {
        let elf = goblin::elf::Elf::parse(&library).unwrap();
        elf.dynsyms
            .iter()
            .filter(|symbol| symbol.st_shndx != 0)
            .filter_map(|symbol| elf.dynstrtab.get_at(symbol.st_name).map(str::to_string))
            .collect()
    };
    // What the library defines (throwing, runtime_error, printing a long double) stays
    // inside the extension; the extension's own template instantiations are its own.
    for name in [
        "__cxa_throw",
        "_ZNSt13runtime_errorC1EPKc",
        "_ZNSo9_M_insertIgEERSoT_",
    ] {
        assert!(
            !exported.iter().any(|exported| exported == name),
            "{name} is exported: {exported:?}"
        );
    }

    // 129/7 to 25 digits needs double-double precision; to_string prints six decimals.
    assert_eq!(
        stdout_under_qemu(dir.path(), "./main"),
        "18.42857142857142857142857 18.428571 thrown\n"
    );
    assert_eq!(
        repaired_names(dir.path(), &library),
        ["ldbl-1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl"]
    );
}
