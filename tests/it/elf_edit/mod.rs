//! `elf::edit` on real libraries: scipy-openblas32's libscipy_openblas for aarch64
//! and ppc64le, plus a small library and loader cross-compiled with zig (x86_64, armhf
//! and big-endian s390x), loaded under qemu-user with Debian's glibc for the target.
//!
//! Needs: the fixture wheels (`scripts/fetch-fixtures`), `python3 -m ziglang`,
//! qemu-aarch64-static / qemu-ppc64le-static, binutils' readelf, apt-get and
//! dpkg-deb (for `tests/it/common/target-libc.sh`). A missing piece fails the test.

mod harness;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crosswheel::formats::elf::edit::{ElfEditError, ElfEdits, apply_edits, check_layout};
use harness::{
    AARCH64, ARMHF, PPC64LE, S390X, Target, X86_64, assert_printed,
    assert_program_headers_are_sane, count_loads, dynamic_values, edit_file, readelf, run_loader,
    section_header_offset, wheel_like_layout, wheel_member, zig_cc,
};

const OPENBLAS_34_AARCH64: &str =
    "scipy_openblas32-0.3.34.481.3-py3-none-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl";
const OPENBLAS_34_PPC64LE: &str =
    "scipy_openblas32-0.3.34.481.3-py3-none-manylinux_2_27_ppc64le.manylinux_2_28_ppc64le.whl";
const OPENBLAS_31_AARCH64: &str =
    "scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl";
const OPENBLAS_MEMBER: &str = "scipy_openblas32/lib/libscipy_openblas.so";
const GFORTRAN_31_AARCH64_MEMBER: &str = "scipy_openblas32/lib/libgfortran-daac5196.so.5.0.0";

const RENAMED_OPENBLAS: &str = "libscipy_openblas-1a2b3c4d.so";
const LIBS_RUNPATH: &str = "$ORIGIN/../pkg.libs";

/// The vectors `dotext_check()` multiplies; the C source is generated from them.
const DOTEXT_X: [f64; 3] = [1.5, -2.0, 4.0];
const DOTEXT_Y: [f64; 3] = [2.0, 0.25, 3.0];
/// The vectors `loader --ddot` passes (see tests/it/common/loader.c).
const LOADER_X: [f64; 4] = [1.0, 2.0, 3.0, 4.0];
const LOADER_Y: [f64; 4] = [5.0, 6.0, 7.0, 8.0];

/// What `inner_value()` returns; `chain_check()` adds one to it.
const INNER_VALUE: f64 = 2.75;

#[test]
#[ignore = "slow: zig-built loader under qemu"]
fn aarch64_renamed_openblas_loads_through_edited_needed_and_runpath() {
    renamed_openblas_loads_through_edited_needed_and_runpath(AARCH64, false);
}

#[test]
#[ignore = "slow: zig-built loader under qemu"]
fn aarch64_stripped_openblas_and_extension_still_load_and_compute() {
    renamed_openblas_loads_through_edited_needed_and_runpath(AARCH64, true);
}

#[test]
#[ignore = "slow: zig-built loader under qemu"]
fn ppc64le_stripped_openblas_and_extension_still_load_and_compute() {
    renamed_openblas_loads_through_edited_needed_and_runpath(PPC64LE, true);
}

#[test]
#[ignore = "slow: zig-built loader under qemu"]
fn ppc64le_renamed_openblas_loads_through_edited_needed_and_runpath() {
    renamed_openblas_loads_through_edited_needed_and_runpath(PPC64LE, false);
}

/// With `strip`, both files also lose their symbol tables and debug sections
/// (`auditwheel repair --strip`) and still load and compute through their dynamic ones.
fn renamed_openblas_loads_through_edited_needed_and_runpath(target: Target, strip: bool) {
    let work = tempfile::tempdir().expect("create temp dir");
    let built = build_test_programs(target, work.path());

    let (pkg, libs) = wheel_like_layout(work.path());
    let openblas = edit_file(
        &built.openblas,
        &libs.join(RENAMED_OPENBLAS),
        &ElfEdits {
            soname: Some(RENAMED_OPENBLAS.into()),
            strip,
            ..ElfEdits::default()
        },
    );
    let dotext = edit_file(
        &built.dotext,
        &pkg.join("libdotext.so"),
        &ElfEdits {
            replace_needed: BTreeMap::from([(
                "libscipy_openblas.so".into(),
                RENAMED_OPENBLAS.into(),
            )]),
            runpath: Some(vec![LIBS_RUNPATH.into()]),
            strip,
            ..ElfEdits::default()
        },
    );
    for (edited, original) in [(&openblas, &built.openblas), (&dotext, &built.dotext)] {
        assert_stripped_as_asked(edited, original, strip);
    }

    let openblas_dynamic = readelf(&["-dW"], &openblas);
    assert_eq!(
        dynamic_values(&openblas_dynamic, "SONAME"),
        [RENAMED_OPENBLAS]
    );
    let dotext_dynamic = readelf(&["-dW"], &dotext);
    assert_eq!(
        dynamic_values(&dotext_dynamic, "NEEDED"),
        [RENAMED_OPENBLAS]
    );
    assert_eq!(dynamic_values(&dotext_dynamic, "RUNPATH"), [LIBS_RUNPATH]);
    assert!(dynamic_values(&dotext_dynamic, "RPATH").is_empty());
    assert_program_headers_are_sane(&openblas);
    assert_program_headers_are_sane(&dotext);

    let output = run_loader(
        target,
        &built.loader,
        &[
            dotext.to_str().expect("utf-8 path"),
            "--call",
            "dotext_check",
        ],
    );
    assert_printed(&output, "dotext_check", dot(&DOTEXT_X, &DOTEXT_Y));
    let output = run_loader(
        target,
        &built.loader,
        &[
            openblas.to_str().expect("utf-8 path"),
            "--ddot",
            "scipy_cblas_ddot",
        ],
    );
    assert_printed(&output, "scipy_cblas_ddot", dot(&LOADER_X, &LOADER_Y));
}

#[test]
#[ignore = "slow: zig-built loader under qemu"]
fn aarch64_renaming_vendored_gfortran_renames_its_version_needs() {
    let work = tempfile::tempdir().expect("create temp dir");
    let built = build_test_programs(AARCH64, work.path());
    let old_name = "libgfortran-daac5196.so.5.0.0";
    let new_name = "libgfortran-0badc0de.so.5.0.0";
    let (_, libs) = wheel_like_layout(work.path());

    let gfortran = work.path().join(old_name);
    fs::write(
        &gfortran,
        wheel_member(OPENBLAS_31_AARCH64, GFORTRAN_31_AARCH64_MEMBER),
    )
    .expect("write libgfortran");
    let openblas = work.path().join("libscipy_openblas-0.3.31.so");
    fs::write(
        &openblas,
        wheel_member(OPENBLAS_31_AARCH64, OPENBLAS_MEMBER),
    )
    .expect("write libscipy_openblas");
    assert!(readelf(&["-VW"], &openblas).contains(old_name));

    edit_file(
        &gfortran,
        &libs.join(new_name),
        &ElfEdits {
            soname: Some(new_name.into()),
            ..ElfEdits::default()
        },
    );
    let openblas = edit_file(
        &openblas,
        &libs.join("libscipy_openblas.so"),
        &ElfEdits {
            replace_needed: BTreeMap::from([(old_name.into(), new_name.into())]),
            ..ElfEdits::default()
        },
    );

    let dynamic = readelf(&["-dW"], &openblas);
    assert!(dynamic_values(&dynamic, "NEEDED").contains(&new_name.to_owned()));
    let versions = readelf(&["-VW"], &openblas);
    assert!(
        versions.contains(&format!("File: {new_name}")),
        "{versions}"
    );
    assert!(!versions.contains(old_name), "{versions}");

    let output = run_loader(
        AARCH64,
        &built.loader,
        &[
            openblas.to_str().expect("utf-8 path"),
            "--ddot",
            "scipy_cblas_ddot",
        ],
    );
    assert_printed(&output, "scipy_cblas_ddot", dot(&LOADER_X, &LOADER_Y));
}

#[test]
#[ignore = "slow: zig-built loader under qemu"]
fn long_runpath_moves_dynstr_of_ppc64le_openblas_to_a_new_load_segment() {
    let work = tempfile::tempdir().expect("create temp dir");
    let built = build_test_programs(PPC64LE, work.path());
    let original = fs::read(&built.openblas).expect("read openblas");
    let loads_before = count_loads(&readelf(&["-lW"], &built.openblas));

    // 4 KiB of runpath cannot fit in the slot .dynstr has in the linker's layout.
    let runpath: Vec<String> = (0..64)
        .map(|index| format!("$ORIGIN/../a-rather-long-directory-name-for-entry-{index:03}"))
        .collect();
    let edited = work.path().join("libscipy_openblas.so");
    edit_file(
        &built.openblas,
        &edited,
        &ElfEdits {
            soname: Some(RENAMED_OPENBLAS.into()),
            runpath: Some(runpath.clone()),
            ..ElfEdits::default()
        },
    );

    assert_eq!(count_loads(&readelf(&["-lW"], &edited)), loads_before + 1);
    let dynamic = readelf(&["-dW"], &edited);
    assert_eq!(dynamic_values(&dynamic, "RUNPATH"), [runpath.join(":")]);
    assert_eq!(dynamic_values(&dynamic, "SONAME"), [RENAMED_OPENBLAS]);
    assert_program_headers_are_sane(&edited);
    assert!(fs::read(&edited).expect("read edited").len() > original.len());

    let output = run_loader(
        PPC64LE,
        &built.loader,
        &[
            edited.to_str().expect("utf-8 path"),
            "--ddot",
            "scipy_cblas_ddot",
        ],
    );
    assert_printed(&output, "scipy_cblas_ddot", dot(&LOADER_X, &LOADER_Y));
}

#[test]
#[ignore = "slow: zig-built libraries"]
fn x86_64_library_chain_loads_natively_after_relayout() {
    library_chain_loads_after_relayout(X86_64);
}

#[test]
#[ignore = "slow: zig-built libraries under qemu"]
fn armhf_32bit_library_chain_loads_after_relayout() {
    library_chain_loads_after_relayout(ARMHF);
}

#[test]
#[ignore = "slow: zig-built libraries under qemu"]
fn s390x_big_endian_library_chain_loads_after_relayout() {
    library_chain_loads_after_relayout(S390X);
}

/// `strip` on a big-endian file built with debug information: the symbol table, its
/// strings and the DWARF go, the dynamic symbols stay and the chain still loads.
#[test]
#[ignore = "slow: zig-built libraries under qemu"]
fn s390x_big_endian_library_with_debug_information_loads_after_stripping() {
    let work = tempfile::tempdir().expect("create temp dir");
    let source = work.path().join("inner.c");
    fs::write(
        &source,
        format!("double inner_value(void) {{ return {INNER_VALUE:?}; }}\n"),
    )
    .expect("write inner.c");
    let library = work.path().join("libinner.so");
    let loader = work.path().join("loader");
    let loader_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/loader.c");
    zig_cc(
        S390X,
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-g".as_ref(),
            "-o".as_ref(),
            library.as_os_str(),
            source.as_os_str(),
        ],
    );
    zig_cc(
        S390X,
        &[
            "-o".as_ref(),
            loader.as_os_str(),
            loader_source.as_os_str(),
            "-ldl".as_ref(),
        ],
    );
    assert!(readelf(&["-SW"], &library).contains(".debug_info"));
    let stripped = edit_file(
        &library,
        &work.path().join("libinner-stripped.so"),
        &ElfEdits {
            strip: true,
            ..ElfEdits::default()
        },
    );
    assert_stripped_as_asked(&stripped, &library, true);
    assert_program_headers_are_sane(&stripped);
    let output = run_loader(
        S390X,
        &loader,
        &[
            stripped.to_str().expect("utf-8 path"),
            "--call",
            "inner_value",
        ],
    );
    assert_printed(&output, "inner_value", INNER_VALUE);
}

/// A stripped file has no `.symtab`, `.strtab` or `.debug*` section and is smaller than
/// its original; an unstripped one keeps whichever of them its original had.
fn assert_stripped_as_asked(edited: &Path, original: &Path, strip: bool) {
    let sections = readelf(&["-SW"], edited);
    let has_symbols = [" .symtab", " .strtab", " .debug"]
        .iter()
        .any(|name| sections.contains(name));
    if strip {
        assert!(!has_symbols, "{}:\n{sections}", edited.display());
        let size = |path: &Path| fs::metadata(path).expect("stat").len();
        assert!(size(edited) < size(original), "{}", edited.display());
    } else {
        assert_eq!(
            has_symbols,
            readelf(&["-SW"], original).contains(" .symtab"),
            "{sections}"
        );
    }
}

/// libouter.so needs libinner.so; both are renamed and re-pointed with a runpath
/// too long for the linker's layout, then loaded through the edited names.
fn library_chain_loads_after_relayout(target: Target) {
    let work = tempfile::tempdir().expect("create temp dir");
    let build = work.path().join("build");
    fs::create_dir_all(&build).expect("create build dir");
    let inner_source = build.join("inner.c");
    fs::write(
        &inner_source,
        format!("double inner_value(void) {{ return {INNER_VALUE:?}; }}\n"),
    )
    .expect("write inner.c");
    let outer_source = build.join("outer.c");
    fs::write(
        &outer_source,
        "double inner_value(void);\ndouble chain_check(void) { return inner_value() + 1.0; }\n",
    )
    .expect("write outer.c");
    let inner = build.join("libinner.so");
    let outer = build.join("libouter.so");
    let loader = build.join("loader");
    let loader_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/loader.c");
    zig_cc(
        target,
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-Wl,-soname,libinner.so".as_ref(),
            "-o".as_ref(),
            inner.as_os_str(),
            inner_source.as_os_str(),
        ],
    );
    zig_cc(
        target,
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-o".as_ref(),
            outer.as_os_str(),
            outer_source.as_os_str(),
            "-L".as_ref(),
            build.as_os_str(),
            "-linner".as_ref(),
        ],
    );
    zig_cc(
        target,
        &[
            "-o".as_ref(),
            loader.as_os_str(),
            loader_source.as_os_str(),
            "-ldl".as_ref(),
        ],
    );

    let renamed_inner = "libinner-1a2b3c4d.so";
    let mut runpath: Vec<String> = (0..40)
        .map(|index| format!("$ORIGIN/../unused-directory-{index:02}"))
        .collect();
    runpath.push(LIBS_RUNPATH.into());
    let (pkg, libs) = wheel_like_layout(work.path());
    let loads_before = count_loads(&readelf(&["-lW"], &outer));
    let inner = edit_file(
        &inner,
        &libs.join(renamed_inner),
        &ElfEdits {
            soname: Some(renamed_inner.into()),
            ..ElfEdits::default()
        },
    );
    let outer = edit_file(
        &outer,
        &pkg.join("libouter.so"),
        &ElfEdits {
            replace_needed: BTreeMap::from([("libinner.so".into(), renamed_inner.into())]),
            runpath: Some(runpath.clone()),
            ..ElfEdits::default()
        },
    );

    assert_eq!(count_loads(&readelf(&["-lW"], &outer)), loads_before + 1);
    let dynamic = readelf(&["-dW"], &outer);
    assert_eq!(dynamic_values(&dynamic, "NEEDED")[0], renamed_inner);
    assert_eq!(dynamic_values(&dynamic, "RUNPATH"), [runpath.join(":")]);
    assert_eq!(
        dynamic_values(&readelf(&["-dW"], &inner), "SONAME"),
        [renamed_inner]
    );
    assert_program_headers_are_sane(&inner);
    assert_program_headers_are_sane(&outer);

    let output = run_loader(
        target,
        &loader,
        &[outer.to_str().expect("utf-8 path"), "--call", "chain_check"],
    );
    assert_printed(&output, "chain_check", INNER_VALUE + 1.0);
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn edits_matching_the_file_return_the_input_bytes() {
    let original = wheel_member(OPENBLAS_34_PPC64LE, OPENBLAS_MEMBER);
    let unchanged = [
        ElfEdits::default(),
        ElfEdits {
            soname: Some("libscipy_openblas.so".into()),
            replace_needed: BTreeMap::from([(
                "libgfortran.so.5".into(),
                "libgfortran-0badc0de.so.5".into(),
            )]),
            remove_needed: ["libnot-needed.so.1".to_string()].into(),
            runpath: None,
            strip: false,
        },
    ];
    for edits in &unchanged {
        let output = apply_edits(&original, edits).expect("apply no-op edits");
        assert!(output == original, "{edits:?} changed the file");
    }
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn applying_the_same_edits_twice_changes_nothing_the_second_time() {
    for (wheel, needed) in [
        (OPENBLAS_34_AARCH64, "libm.so.6"),
        (OPENBLAS_34_PPC64LE, "libm.so.6"),
    ] {
        let original = wheel_member(wheel, OPENBLAS_MEMBER);
        let edits = ElfEdits {
            soname: Some(RENAMED_OPENBLAS.into()),
            replace_needed: BTreeMap::from([(needed.into(), "libm-5ca1ab1e.so.6".into())]),
            runpath: Some(vec![LIBS_RUNPATH.into(), "$ORIGIN".into()]),
            ..ElfEdits::default()
        };
        let once = apply_edits(&original, &edits).expect("first edit");
        assert!(once != original, "{wheel}: first edit changed nothing");
        let twice = apply_edits(&once, &edits).expect("second edit");
        assert!(twice == once, "{wheel}: second edit changed the file");
    }
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn truncated_files_are_rejected_without_panicking() {
    let original = wheel_member(OPENBLAS_34_AARCH64, OPENBLAS_MEMBER);
    let edits = soname_edit();
    for length in [
        0,
        4,
        16,
        63,
        64,
        200,
        0x1000,
        original.len() / 2,
        original.len() - 1,
    ] {
        let result = apply_edits(&original[..length], &edits);
        assert!(
            matches!(
                result,
                Err(ElfEditError::Parse(_) | ElfEditError::MalformedInput(_))
            ),
            "length {length}: {result:?}"
        );
    }
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn dynamic_section_pointing_outside_the_file_is_rejected() {
    let mut data = wheel_member(OPENBLAS_34_AARCH64, OPENBLAS_MEMBER);
    let dynamic_header = section_header_offset(&data, ".dynamic");
    // sh_offset is at byte 24 of an Elf64_Shdr.
    let past_end = (data.len() as u64 + 0x1000).to_le_bytes();
    data[dynamic_header + 24..dynamic_header + 32].copy_from_slice(&past_end);

    let result = apply_edits(&data, &soname_edit());
    match result {
        Err(ElfEditError::Parse(message) | ElfEditError::MalformedInput(message)) => assert!(
            message.to_lowercase().contains("dynamic"),
            "error does not name the dynamic section: {message}"
        ),
        other => panic!("expected a parse error, got {other:?}"),
    }
    assert!(check_layout(&data).is_err());
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn corrupted_headers_never_panic() {
    // libgfortran (1.5 MB) rather than OpenBLAS (30 MB) keeps 200 rounds quick.
    let original = wheel_member(OPENBLAS_31_AARCH64, GFORTRAN_31_AARCH64_MEMBER);
    let edits = soname_edit();
    // A fixed xorshift sequence: the same mutations on every run.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..200 {
        let mut data = original.clone();
        for _ in 0..4 {
            // Corrupt the ELF header, program headers or the section headers.
            let region = if next() % 2 == 0 {
                0..0x300
            } else {
                data.len() - 0x800..data.len()
            };
            let index = region.start + (next() as usize) % region.len();
            data[index] ^= (next() as u8) | 1;
        }
        if let Ok(output) = apply_edits(&data, &edits) {
            check_layout(&output).expect("an accepted edit passes the layout check");
        }
    }
}

fn openblas_wheel(target: Target) -> &'static str {
    match target.name {
        "aarch64" => OPENBLAS_34_AARCH64,
        "ppc64le" => OPENBLAS_34_PPC64LE,
        other => panic!("no OpenBLAS fixture for {other}"),
    }
}

fn soname_edit() -> ElfEdits {
    ElfEdits {
        soname: Some(RENAMED_OPENBLAS.into()),
        ..ElfEdits::default()
    }
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

struct TestPrograms {
    /// The unmodified libscipy_openblas.so, SONAME `libscipy_openblas.so`.
    openblas: PathBuf,
    /// Calls `scipy_cblas_ddot`; DT_NEEDED `libscipy_openblas.so`, no runpath.
    dotext: PathBuf,
    loader: PathBuf,
}

fn build_test_programs(target: Target, dir: &Path) -> TestPrograms {
    let build = dir.join("build");
    fs::create_dir_all(&build).expect("create build dir");
    let openblas = build.join("libscipy_openblas.so");
    fs::write(
        &openblas,
        wheel_member(openblas_wheel(target), OPENBLAS_MEMBER),
    )
    .expect("write libscipy_openblas.so");

    let source = build.join("dotext.c");
    fs::write(&source, dotext_source()).expect("write dotext.c");
    let dotext = build.join("libdotext.so");
    zig_cc(
        target,
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-o".as_ref(),
            dotext.as_os_str(),
            source.as_os_str(),
            "-L".as_ref(),
            build.as_os_str(),
            "-lscipy_openblas".as_ref(),
        ],
    );

    let loader = build.join("loader");
    let loader_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/loader.c");
    zig_cc(
        target,
        &[
            "-o".as_ref(),
            loader.as_os_str(),
            loader_source.as_os_str(),
            "-ldl".as_ref(),
        ],
    );
    TestPrograms {
        openblas,
        dotext,
        loader,
    }
}

fn dotext_source() -> String {
    let list = |values: &[f64]| {
        values
            .iter()
            .map(|value| format!("{value:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "double scipy_cblas_ddot(int n, const double *x, int incx, const double *y, int incy);\n\
         double dotext_check(void) {{\n\
         \x20   static const double x[] = {{{}}};\n\
         \x20   static const double y[] = {{{}}};\n\
         \x20   return scipy_cblas_ddot({}, x, 1, y, 1);\n\
         }}\n",
        list(&DOTEXT_X),
        list(&DOTEXT_Y),
        DOTEXT_X.len()
    )
}
