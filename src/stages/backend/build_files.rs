//! What a project's meson and CMake files say it compiles, read before the build so the
//! toolchain fetches only the compilers a build needs and a target that cannot have one
//! stops before any build.
//!
//! Only the files the build system would read count: meson's `meson.build` and those its
//! `subdir()` calls reach, CMake's `CMakeLists.txt` and those `add_subdirectory()`
//! reaches. numpy's sdist holds a meson test case and an f2py example that add Fortran,
//! but its build never reads them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Whether the project's meson or CMake build requires a Fortran compiler: meson's
/// `project()` or `add_languages()` naming `fortran` without `required: false`, CMake's
/// `project()` or `enable_language()` naming `Fortran` without `OPTIONAL`.
pub fn requires_fortran(dir: &Path) -> bool {
    requires_language(dir, "fortran", "Fortran")
}

/// Whether the project's meson or CMake build requires a CUDA compiler, as
/// [`requires_fortran`] reads them (`'cuda'`, `CUDA`).
pub fn requires_cuda(dir: &Path) -> bool {
    requires_language(dir, "cuda", "CUDA")
}

/// Whether the project's build asks for OpenMP, so that its targets get an OpenMP runtime
/// (the catalogue's libomp) before the build: meson's `dependency('openmp')`, CMake's
/// `find_package(OpenMP)`, or `-fopenmp` in a setuptools project's Python or setup.cfg
/// (cupy's build helpers pass it for cuSOLVER). An optional dependency counts: the
/// index's wheels of such projects are built with it.
pub fn requires_openmp(dir: &Path) -> bool {
    let meson = reachable_files(dir, "meson.build", "subdir")
        .iter()
        .any(|text| {
            calls(text, "dependency")
                .any(|args| names_language(&args.to_ascii_lowercase(), "openmp"))
        });
    let cmake = || {
        reachable_files(dir, "CMakeLists.txt", "add_subdirectory")
            .iter()
            .any(|text| {
                calls(text, "find_package")
                    .any(|args| args.split_whitespace().next() == Some("OpenMP"))
            })
    };
    meson || cmake() || setuptools_asks_for_openmp(dir)
}

/// Folders of a project whose Python is not its build's.
const NOT_BUILD_CODE: &[&str] = &[
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "examples",
    "benchmarks",
];

/// `-fopenmp` in `setup.py`, `setup.cfg` or a Python file at most three folders down
/// (build helpers such as cupy's `install/cupy_builder/`), outside tests and docs.
fn setuptools_asks_for_openmp(dir: &Path) -> bool {
    fn search(folder: &Path, depth: usize) -> bool {
        let Ok(entries) = std::fs::read_dir(folder) else {
            return false;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|entry| entry.file_name());
        entries.iter().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                return false;
            };
            if kind.is_dir() {
                depth > 0
                    && !name.starts_with('.')
                    && !NOT_BUILD_CODE.contains(&name.as_ref())
                    && search(&entry.path(), depth - 1)
            } else {
                kind.is_file()
                    && (name.ends_with(".py") || name == "setup.cfg")
                    && std::fs::read_to_string(entry.path())
                        .is_ok_and(|text| text.contains("-fopenmp"))
            }
        })
    }
    search(dir, 3)
}

/// Whether meson's files name the language `meson` (lower case) or CMake's name `cmake`
/// in a call that enables languages, not as optional.
fn requires_language(dir: &Path, meson: &str, cmake: &str) -> bool {
    let meson_files = reachable_files(dir, "meson.build", "subdir");
    let meson_requires = meson_files.iter().any(|text| {
        calls(text, "project")
            .chain(calls(text, "add_languages"))
            .any(|args| {
                let lower = args.to_ascii_lowercase();
                names_language(&lower, meson) && !optional_in_meson(&lower)
            })
    });
    meson_requires
        || reachable_files(dir, "CMakeLists.txt", "add_subdirectory")
            .iter()
            .any(|text| {
                calls(text, "project")
                    .chain(calls(text, "enable_language"))
                    .any(|args| {
                        args.split_whitespace().any(|word| word == cmake)
                            && !args.split_whitespace().any(|word| word == "OPTIONAL")
                    })
            })
}

fn names_language(args: &str, language: &str) -> bool {
    args.contains(&format!("'{language}'"))
}

fn optional_in_meson(args: &str) -> bool {
    let compact: String = args.chars().filter(|c| !c.is_whitespace()).collect();
    compact.contains("required:false")
}

/// The comment-free text of `dir/name` and of the files its `include_call`s reach
/// (`subdir('x')` reads `x/meson.build`), each once.
fn reachable_files(dir: &Path, name: &str, include_call: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut texts = Vec::new();
    while let Some(folder) = pending.pop() {
        let Ok(canonical) = folder.canonicalize() else {
            continue;
        };
        // A build file outside the project is not the project's.
        if !canonical.starts_with(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()))
            || !seen.insert(canonical)
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(folder.join(name)) else {
            continue;
        };
        let text = without_comments(&text);
        for args in calls(&text, include_call) {
            if let Some(sub) = first_argument(&args) {
                pending.push(folder.join(sub));
            }
        }
        texts.push(text);
    }
    texts
}

/// meson and CMake both comment from `#` to the line's end (outside strings, which
/// build files rarely put a `#` in).
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The argument text of every call of `function` in `text` (`project('x', 'c')` gives
/// `'x', 'c'`); meson and CMake calls are a name, optional blanks and parentheses.
fn calls<'a>(text: &'a str, function: &'a str) -> impl Iterator<Item = String> + 'a {
    text.match_indices(function).filter_map(move |(start, _)| {
        let before = text[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
            return None;
        }
        let rest = text[start + function.len()..].trim_start();
        let inner = rest.strip_prefix('(')?;
        let mut depth = 1;
        for (index, c) in inner.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(inner[..index].to_string());
                    }
                }
                _ => {}
            }
        }
        None
    })
}

/// The first argument of a call as a path: `'x'` in meson, `x` or `"x"` in CMake.
fn first_argument(args: &str) -> Option<PathBuf> {
    let first = args
        .split([',', ' ', '\n', '\t'])
        .find(|part| !part.trim().is_empty())?
        .trim()
        .trim_matches(['\'', '"']);
    (!first.is_empty() && !first.contains("${") && !first.contains('@'))
        .then(|| PathBuf::from(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmp_is_asked_for_by_meson_cmake_or_a_setuptools_flag() {
        let meson = project(&[
            ("meson.build", "project('x', 'c')\nsubdir('src')\n"),
            (
                "src/meson.build",
                "omp = dependency('OpenMP', language: 'c', required: false)\n",
            ),
        ]);
        assert!(requires_openmp(meson.path()));
        let cmake = project(&[("CMakeLists.txt", "find_package(OpenMP REQUIRED)\n")]);
        assert!(requires_openmp(cmake.path()));
        let cupy_like = project(&[(
            "install/cupy_builder/cupy_setup_build.py",
            "compile_args.append('-fopenmp')\n",
        )]);
        assert!(requires_openmp(cupy_like.path()));
    }

    #[test]
    fn openmp_in_comments_tests_or_unread_files_is_not_asked_for() {
        let commented = project(&[("meson.build", "# dependency('openmp')\nproject('x', 'c')\n")]);
        assert!(!requires_openmp(commented.path()));
        let in_tests = project(&[("tests/test_build.py", "flags = ['-fopenmp']\n")]);
        assert!(!requires_openmp(in_tests.path()));
        let unread = project(&[
            ("meson.build", "project('x', 'c')\n"),
            ("other/meson.build", "dependency('openmp')\n"),
        ]);
        assert!(!requires_openmp(unread.path()));
        let plain = project(&[("setup.py", "setup(name='x')\n")]);
        assert!(!requires_openmp(plain.path()));
    }

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn scipy_style_add_languages_in_a_subdir_requires_fortran() {
        let dir = project(&[
            (
                "meson.build",
                "project('scipy', 'c', 'cpp', 'cython')\nsubdir('scipy')\n",
            ),
            (
                "scipy/meson.build",
                "# Fortran is needed for LAPACK wrappers\nadd_languages('fortran', native: false)\nff = meson.get_compiler('fortran')\n",
            ),
        ]);
        assert!(requires_fortran(dir.path()));
    }

    #[test]
    fn fortran_in_project_languages_requires_it() {
        let dir = project(&[("meson.build", "project(\n  'x',\n  'c', 'fortran',\n)\n")]);
        assert!(requires_fortran(dir.path()));
    }

    #[test]
    fn optional_fortran_and_unread_files_do_not() {
        let optional = project(&[(
            "meson.build",
            "project('x', 'c')\nhave = add_languages('fortran', required : false)\n",
        )]);
        assert!(!requires_fortran(optional.path()));
        // numpy's sdist: an f2py example the build never reads.
        let unread = project(&[
            (
                "meson.build",
                "project('numpy', 'c', 'cpp')\nsubdir('numpy')\n",
            ),
            ("numpy/meson.build", "py.install_sources('x.py')\n"),
            (
                "doc/source/f2py/code/meson.build",
                "add_languages('fortran')\n",
            ),
        ]);
        assert!(!requires_fortran(unread.path()));
        let commented = project(&[(
            "meson.build",
            "project('x', 'c') # add_languages('fortran')\n",
        )]);
        assert!(!requires_fortran(commented.path()));
    }

    #[test]
    fn cmake_enable_language_requires_fortran_unless_optional() {
        let required = project(&[
            ("CMakeLists.txt", "project(x C)\nadd_subdirectory(src)\n"),
            ("src/CMakeLists.txt", "enable_language(Fortran)\n"),
        ]);
        assert!(requires_fortran(required.path()));
        let optional = project(&[(
            "CMakeLists.txt",
            "project(x C)\nenable_language(Fortran OPTIONAL)\n",
        )]);
        assert!(!requires_fortran(optional.path()));
        let in_project = project(&[("CMakeLists.txt", "project(x LANGUAGES C Fortran)\n")]);
        assert!(requires_fortran(in_project.path()));
    }

    #[test]
    fn cuda_is_required_by_meson_or_cmake_naming_it() {
        let cmake = project(&[(
            "CMakeLists.txt",
            "cmake_minimum_required(VERSION 3.24)\nproject(k LANGUAGES CXX CUDA)\n",
        )]);
        assert!(requires_cuda(cmake.path()));
        assert!(!requires_fortran(cmake.path()));
        let meson = project(&[("meson.build", "project('k', 'cpp', 'cuda')\n")]);
        assert!(requires_cuda(meson.path()));
        let optional = project(&[(
            "meson.build",
            "project('k', 'cpp')\nadd_languages('cuda', required: false)\n",
        )]);
        assert!(!requires_cuda(optional.path()));
        let cxx_only = project(&[("CMakeLists.txt", "project(k LANGUAGES CXX)\n")]);
        assert!(!requires_cuda(cxx_only.path()));
    }

    #[test]
    fn a_subdir_outside_the_project_is_not_read() {
        let outer = project(&[("elsewhere/meson.build", "add_languages('fortran')\n")]);
        std::fs::create_dir_all(outer.path().join("p")).unwrap();
        std::fs::write(
            outer.path().join("p/meson.build"),
            "project('x', 'c')\nsubdir('../elsewhere')\n",
        )
        .unwrap();
        assert!(!requires_fortran(&outer.path().join("p")));
    }
}
