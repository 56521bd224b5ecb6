//! What crosswheel's zig compiler wrappers do to real compiles and links: link-time
//! optimisation is kept where zig can link it and dropped, with one notice for the build,
//! where it cannot; GCC-only pass options are dropped with one notice; a request for an
//! external assembler gets the target's GNU assembler when it is on PATH and is dropped
//! otherwise, with one notice either way; linked outputs carry
//! no debug info unless the build asked for it; s390x code is for z10 unless the build asks
//! for more.

use crate::common;

use std::path::Path;
use std::process::Command;

use crosswheel::stages::toolchain::{WRAPPER_NOTES_VAR, wrapper_notices};

/// Runs `compiler args` in `dir` as inside a build whose notes folder is `notes`.
fn run(compiler: &Path, dir: &Path, notes: &Path, args: &[&str]) {
    run_with_path(compiler, dir, notes, None, args);
}

/// Runs `compiler args` as [`run`] does, with PATH set to `path` when given.
fn run_with_path(
    compiler: &Path,
    dir: &Path,
    notes: &Path,
    path: Option<&std::ffi::OsStr>,
    args: &[&str],
) {
    let mut command = Command::new(compiler);
    command
        .args(args)
        .current_dir(dir)
        .env(WRAPPER_NOTES_VAR, notes)
        .env_remove("CFLAGS")
        .env_remove("CXXFLAGS")
        .env_remove("LDFLAGS");
    if let Some(path) = path {
        command.env("PATH", path);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{} {args:?}: {}",
        compiler.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Compiles two files with `lto` and links them into `lib.so`; returns the first object.
fn lto_build(target: &str, dir: &Path, notes: &Path, lto: &str) -> Vec<u8> {
    std::fs::write(
        dir.join("a.c"),
        "int g(int);\nint h(int x) { return g(x) + 1; }\n",
    )
    .unwrap();
    std::fs::write(dir.join("b.c"), "int g(int x) { return x * 3; }\n").unwrap();
    let cc = common::zig_wrapper(target, false);
    run(&cc, dir, notes, &["-fPIC", lto, "-c", "a.c", "-o", "a.o"]);
    run(&cc, dir, notes, &["-fPIC", lto, "-c", "b.c", "-o", "b.o"]);
    let mut link = vec!["-shared", lto, "a.o", "b.o", "-o", "lib.so"];
    if target.starts_with("macos") {
        link.extend(["-undefined", "dynamic_lookup"]);
    }
    run(&cc, dir, notes, &link);
    std::fs::read(dir.join("a.o")).unwrap()
}

const LLVM_BITCODE: &[u8] = b"BC\xc0\xde";

#[test]
#[ignore = "slow: real zig compiles and links"]
fn thin_lto_stays_on_for_aarch64_linux() {
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    let object = lto_build("linux-aarch64", dir.path(), notes.path(), "-flto=thin");
    assert!(
        object.starts_with(LLVM_BITCODE),
        "the object is no LTO bitcode"
    );
    assert_eq!(wrapper_notices(notes.path()), Vec::<String>::new());
}

#[test]
#[ignore = "slow: real zig compiles and links"]
fn lto_is_turned_off_with_one_notice_where_zig_cannot_link_it() {
    for (target, reason) in [
        ("linux-ppc64le", "R_PPC64_REL16_HA"),
        ("macos-arm64", "LTO requires using LLD"),
    ] {
        for lto in ["-flto=thin", "-flto"] {
            let dir = tempfile::tempdir().unwrap();
            let notes = tempfile::tempdir().unwrap();
            let object = lto_build(target, dir.path(), notes.path(), lto);
            assert!(!object.starts_with(LLVM_BITCODE), "{target} {lto}: bitcode");
            let notices = wrapper_notices(notes.path());
            assert_eq!(notices.len(), 1, "{target} {lto}: {notices:?}");
            assert!(
                notices[0].starts_with(&format!(
                    "{target}: link-time optimisation (-flto) turned off: "
                )) && notices[0].contains(reason),
                "{notices:?}"
            );
        }
    }
}

#[test]
#[ignore = "slow: real zig compiles and links"]
fn greenlets_gcc_only_flag_is_dropped_with_one_notice_and_clangs_spellings_kept() {
    // greenlet 3.5.6's setup.py, on ppc64le: `error: unknown clang option` before this.
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.c"), "int h(int x) { return x + 1; }\n").unwrap();
    let cc = common::zig_wrapper("linux-ppc64le", false);
    let flags = [
        "-O2",
        "-fno-tree-dominator-opts",
        "-fno-tree-vectorize",
        "-fipa-pta",
    ];
    run(
        &cc,
        dir.path(),
        notes.path(),
        &[&flags[..], &["-c", "a.c", "-o", "a.o"]].concat(),
    );
    assert!(dir.path().join("a.o").is_file());
    let notices = wrapper_notices(notes.path());
    assert_eq!(
        notices,
        [
            "linux-ppc64le: -fno-tree-dominator-opts -fipa-pta dropped: GCC-only optimisation options that zig's clang refuses (clang has no such passes)"
        ]
    );
}

/// PATH without the folders holding `program`: a build machine without that package.
fn path_without(program: &str) -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<_> = std::env::split_paths(&path)
        .filter(|dir| !dir.join(program).exists())
        .collect();
    std::env::join_paths(kept).unwrap()
}

#[test]
#[ignore = "slow: real zig compiles and links"]
fn without_the_targets_gnu_as_an_external_assembler_request_is_dropped_with_one_notice() {
    // OpenBLAS 0.3.21's kernel Makefile adds -fno-integrated-as for POWER with clang; the
    // build machine's x86_64 `as` would then refuse the target's assembly.
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.c"),
        "int h(int x) { int y; __asm__(\"addi %0, %1, 1\" : \"=r\"(y) : \"r\"(x)); return y; }\n",
    )
    .unwrap();
    let cc = common::zig_wrapper("linux-ppc64le", false);
    run_with_path(
        &cc,
        dir.path(),
        notes.path(),
        Some(&path_without("powerpc64le-linux-gnu-as")),
        &["-O2", "-fno-integrated-as", "-c", "a.c", "-o", "a.o"],
    );
    assert!(dir.path().join("a.o").is_file());
    assert_eq!(
        wrapper_notices(notes.path()),
        [
            "linux-ppc64le: -fno-integrated-as dropped: clang's own assembler assembles the target's code (the `as` on PATH is the build machine's); powerpc64le-linux-gnu-as (Debian/Ubuntu: apt-get install binutils-powerpc64le-linux-gnu) would assemble what clang's cannot"
        ]
    );
}

#[test]
#[ignore = "slow: real zig compiles and links; needs binutils-powerpc64le-linux-gnu"]
fn with_the_targets_gnu_as_on_path_an_external_assembler_request_gets_it_for_power9_and_power10_code()
 {
    // POWER9's `maddld` (OpenBLAS's sbgemv kernel), which the GNU assembler refuses when
    // told the CPU is POWER8 as clang tells it; and a POWER10 call, which binutils 2.40
    // gives a relocation zig's linker refuses unless told the CPU is POWER10.
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p9.c"),
        "long f(long a, long b, long c) { long r; __asm__(\"maddld %0,%1,%2,%3\" : \"=r\"(r) : \"r\"(a), \"r\"(b), \"r\"(c)); return r; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("p10.c"),
        "int g(int x) { return x * 3; }\nint h(int x) { return g(x) + 1; }\n",
    )
    .unwrap();
    let cc = common::zig_wrapper("linux-ppc64le", false);
    let path = std::env::var_os("PATH").unwrap_or_default();
    assert!(
        std::env::split_paths(&path).any(|dir| dir.join("powerpc64le-linux-gnu-as").exists()),
        "this test needs powerpc64le-linux-gnu-as on PATH (apt-get install binutils-powerpc64le-linux-gnu)"
    );
    for (source, cpu) in [("p9.c", "-mcpu=power9"), ("p10.c", "-mcpu=power10")] {
        let object = source.replace(".c", ".o");
        run(
            &cc,
            dir.path(),
            notes.path(),
            &[
                "-O2",
                "-fPIC",
                cpu,
                "-fno-integrated-as",
                "-c",
                source,
                "-o",
                &object,
            ],
        );
    }
    run(
        &cc,
        dir.path(),
        notes.path(),
        &["-shared", "p9.o", "p10.o", "-o", "libpower.so"],
    );
    assert!(dir.path().join("libpower.so").is_file());
    assert_eq!(
        wrapper_notices(notes.path()),
        [
            "linux-ppc64le: -fno-integrated-as: assembled by powerpc64le-linux-gnu-as, the target's GNU assembler"
        ]
    );
}

const CXX_SOURCE: &str = "#include <sstream>\n#include <stdexcept>\n\
    extern \"C\" int f(int x) { std::ostringstream s; s << x;\n\
    if (x < 0) throw std::runtime_error(s.str()); return (int)s.str().size(); }\n";

/// Links a C++ shared library for aarch64 Linux (compiled with `compile_flags`) and
/// returns its bytes.
fn cxx_library(dir: &Path, notes: &Path, compile_flags: &[&str]) -> Vec<u8> {
    std::fs::write(dir.join("p.cpp"), CXX_SOURCE).unwrap();
    let cxx = common::zig_wrapper("linux-aarch64", true);
    let mut compile = vec!["-fPIC", "-c", "p.cpp", "-o", "p.o"];
    compile.extend(compile_flags);
    run(&cxx, dir, notes, &compile);
    run(&cxx, dir, notes, &["-shared", "p.o", "-o", "p.so"]);
    std::fs::read(dir.join("p.so")).unwrap()
}

fn has_section(elf: &[u8], name: &str) -> bool {
    let parsed = goblin::elf::Elf::parse(elf).unwrap();
    parsed
        .section_headers
        .iter()
        .any(|header| parsed.shdr_strtab.get_at(header.sh_name) == Some(name))
}

#[test]
#[ignore = "slow: real zig compiles and links"]
fn cxx_library_carries_no_debug_info_unless_the_build_compiled_with_g() {
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    let release = cxx_library(dir.path(), notes.path(), &[]);
    assert!(!has_section(&release, ".debug_info"));
    assert!(
        release.len() < 1_000_000,
        "{} bytes: zig's libc++ is not stripped of its DWARF",
        release.len()
    );

    let debug_notes = tempfile::tempdir().unwrap();
    let debug = cxx_library(dir.path(), debug_notes.path(), &["-g"]);
    assert!(has_section(&debug, ".debug_info"));
}

/// A setuptools project with two extensions compiled with `extra` flags.
fn two_extension_project(root: &Path, extra: &str) -> std::path::PathBuf {
    let setup_py = format!(
        "from setuptools import Extension, setup\nflags = {extra:?}.split()\n\
         setup(packages=['ltodemo'], ext_modules=[\n    \
         Extension('ltodemo._a', ['a.c'], extra_compile_args=flags, extra_link_args=flags),\n    \
         Extension('ltodemo._b', ['b.c'], extra_compile_args=flags, extra_link_args=flags)])\n"
    );
    let sources: Vec<(String, String)> = ["a", "b"]
        .iter()
        .map(|name| {
            let source = format!(
                "#include <Python.h>\nstatic struct PyModuleDef m = {{PyModuleDef_HEAD_INIT, \"_{name}\", NULL, -1, NULL}};\n\
                 PyMODINIT_FUNC PyInit__{name}(void) {{ return PyModule_Create(&m); }}\n"
            );
            (format!("{name}.c"), source)
        })
        .collect();
    common::setuptools_project(root, "ltodemo", &setup_py, &sources)
}

#[test]
#[ignore = "slow: real zig compiles and links"]
fn a_ppc64le_build_asking_for_thin_lto_builds_and_says_once_that_it_is_off() {
    let work = tempfile::tempdir().unwrap();
    let project = two_extension_project(work.path(), "-flto=thin");
    let output = Command::new(common::crosswheel_bin())
        .arg("build")
        .arg(&project)
        .args(["--only", "cp311-manylinux_ppc64le", "-w"])
        .arg(work.path().join("wheelhouse"))
        .env("CIBW_TEST_SKIP", "*")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{said}");
    let notices: Vec<&str> = said
        .lines()
        .filter(|line| line.contains("link-time optimisation (-flto) turned off"))
        .collect();
    assert_eq!(notices.len(), 1, "{said}");
    assert!(notices[0].contains("linux-ppc64le") && notices[0].contains("R_PPC64_REL16_HA"));
}

#[test]
#[ignore = "slow: real zig compiles and links"]
fn a_macos_link_with_a_response_file_of_python_symbols_leaves_them_to_the_interpreter() {
    // nanobind links extensions with `-Wl,@darwin-ld-cpython.sym`, `-U _Py...` lines.
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        dir.path().join("ext.c"),
        "void *PyLong_FromLong(long);\nvoid *answer(void) { return PyLong_FromLong(42); }\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("python.sym"), "-U _PyLong_FromLong\n").unwrap();
    run(
        &common::zig_wrapper("macos-arm64", false),
        dir.path(),
        &notes,
        &["-shared", "ext.c", "-Wl,@python.sym", "-o", "ext.so"],
    );
    assert!(dir.path().join("ext.so").is_file());
}

#[test]
#[ignore = "slow: real zig compiles and links"]
fn a_macos_dylib_linked_with_all_load_gets_every_member_of_its_archive() {
    // OpenBLAS links libopenblas.dylib from its archive with `-all_load`, which zig's
    // Mach-O linker ignored: the dylib came out with no symbol of the archive.
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.c"), "int f1(int x) { return x + 1; }\n").unwrap();
    std::fs::write(dir.path().join("b.c"), "int f2(int x) { return x + 2; }\n").unwrap();
    let cc = common::zig_wrapper("macos-arm64", false);
    for source in ["a.c", "b.c"] {
        let object = source.replace(".c", ".o");
        run(
            &cc,
            dir.path(),
            notes.path(),
            &["-c", source, "-o", &object],
        );
    }
    let ar = cc.with_file_name("ar");
    let status = Command::new(&ar)
        .args(["rcs", "libx.a", "a.o", "b.o"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    run(
        &cc,
        dir.path(),
        notes.path(),
        &["-all_load", "-dynamiclib", "-o", "libx.dylib", "libx.a"],
    );
    let bytes = std::fs::read(dir.path().join("libx.dylib")).unwrap();
    let exported = common::macho_exports(&bytes);
    for symbol in ["_f1", "_f2"] {
        assert!(exported.iter().any(|name| name == symbol), "{exported:?}");
    }
}

/// The vector instructions (`vfmadb`, `vl`, ...) of the s390x object `object` in `dir`.
fn s390x_vector_instructions(dir: &Path, object: &str) -> usize {
    let objdump = common::require_tool("llvm-objdump", "apt-get install llvm");
    // z15 knows every vector instruction the object could hold.
    let output = Command::new(objdump)
        .args(["-d", "--no-show-raw-insn", "--mcpu=z15", object])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split('\t').nth(1))
        .filter(|mnemonic| mnemonic.starts_with('v'))
        .count()
}

#[test]
#[ignore = "slow: real zig compiles"]
fn s390x_code_is_for_z10_without_vector_instructions_unless_the_build_asks_for_z13() {
    // zig's own s390x baseline is z13, whose vector facility a manylinux2014 machine need
    // not have; clang vectorises this loop wherever it may.
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("axpy.c"),
        "void axpy(int n, double a, const double *x, double *y) {\n  \
         for (int i = 0; i < n; i++) y[i] += a * x[i];\n}\n",
    )
    .unwrap();
    let cc = common::zig_wrapper("linux-s390x", false);
    run(
        &cc,
        dir.path(),
        notes.path(),
        &["-O3", "-c", "axpy.c", "-o", "z10.o"],
    );
    assert_eq!(s390x_vector_instructions(dir.path(), "z10.o"), 0);
    run(
        &cc,
        dir.path(),
        notes.path(),
        &["-O3", "-march=z13", "-c", "axpy.c", "-o", "z13.o"],
    );
    assert!(s390x_vector_instructions(dir.path(), "z13.o") > 0);
}

/// A version script naming a symbol no object defines links as GNU ld links it (the
/// symbol is left out), for a glibc and a musl target: lld alone would stop with
/// `version script assignment of 'VERS_1.0' to symbol 'gone' failed: symbol not defined`.
#[test]
#[ignore = "slow: real zig compiles and links"]
fn a_version_script_naming_an_undefined_symbol_links_as_gnu_ld_links_it() {
    for target in ["linux-aarch64", "musllinux-x86_64"] {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("notes");
        std::fs::create_dir_all(&notes).unwrap();
        std::fs::write(dir.path().join("kept.c"), "int kept(void) { return 7; }\n").unwrap();
        std::fs::write(
            dir.path().join("vers.map"),
            "VERS_1.0 { global: kept; gone; local: *; };\n",
        )
        .unwrap();
        let cc = common::zig_wrapper(target, false);
        run(
            &cc,
            dir.path(),
            &notes,
            &[
                "-shared",
                "-fPIC",
                "kept.c",
                "-Wl,--version-script=vers.map",
                "-o",
                "libkept.so",
            ],
        );
        let exported =
            common::elf_exported_functions(&std::fs::read(dir.path().join("libkept.so")).unwrap());
        assert!(
            exported.iter().any(|name| name == "kept"),
            "{target}: {exported:?}"
        );
        assert!(
            !exported.iter().any(|name| name == "gone"),
            "{target}: {exported:?}"
        );
    }
}
