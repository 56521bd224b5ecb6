//! The target's `_sysconfigdata_*.py`: the build python's own variables with everything
//! that describes the host rewritten for the target.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::stages::toolchain::{Language, Toolchain};
use crate::support::host::BuildPython;
use crate::target::Target;
use crate::target::config as targets_config;

/// Paths inside the cross environment the variables point at.
pub(crate) struct EnvLayout<'a> {
    pub include_dir: &'a Path,
    pub python_include_dir: &'a Path,
    pub lib_dir: &'a Path,
}

pub(crate) fn target_vars(
    python: &BuildPython,
    toolchain: &Toolchain,
    layout: &EnvLayout<'_>,
) -> BTreeMap<String, Value> {
    let target = &toolchain.target;
    let multiarch = target.multiarch(python.target_python()).to_string();
    let mut vars = python.vars.clone();
    let mut set = |key: &str, value: String| {
        vars.insert(key.to_string(), Value::String(value));
    };

    set("EXT_SUFFIX", target.ext_suffix(python.target_python()));
    set("SOABI", target.soabi(python.target_python()));
    set("MULTIARCH", multiarch.clone());
    set("PLATFORM_TRIPLET", multiarch);
    set("HOST_GNU_TYPE", target.data().host_gnu_type.clone());
    set("MACHDEP", target.data().machdep.clone());
    set("SHLIB_SUFFIX", ".so".to_string());

    set_abi(&mut vars, python);
    set_sizes(&mut vars, target);
    set_compilers(&mut vars, toolchain);
    set_flags(&mut vars, layout);
    set_paths(&mut vars, layout);

    // Target CPythons on manylinux and macOS installers do not want extensions to link
    // libpython; a shared build python must not make the target look shared.
    vars.insert("Py_ENABLE_SHARED".to_string(), Value::from(0));
    if target.is_macos() {
        vars.insert(
            "MACOSX_DEPLOYMENT_TARGET".to_string(),
            Value::String(target.os_version().to_string()),
        );
    } else {
        vars.remove("MACOSX_DEPLOYMENT_TARGET");
    }
    vars
}

/// The target's CPython ABI: free-threaded (`t`) or not, whatever the build python's own.
/// Backends read `Py_GIL_DISABLED` (packaging's tags, meson, CMake's FindPython, PyO3) and
/// the `t` in SOABI/EXT_SUFFIX (setuptools' and meson-python's wheel tags); the library
/// names carry it as a real free-threaded CPython's do (`libpython3.13t.so`).
fn set_abi(vars: &mut BTreeMap<String, Value>, python: &BuildPython) {
    let version = python.version_text();
    let host_ldversion = format!("{version}{}", python.abiflags);
    let target_ldversion = format!("{version}{}", python.target_abiflags());
    for key in [
        "LDVERSION",
        "LDLIBRARY",
        "LIBRARY",
        "INSTSONAME",
        "BLDLIBRARY",
    ] {
        if let Some(Value::String(value)) = vars.get(key) {
            let renamed = value.replace(&host_ldversion, &target_ldversion);
            vars.insert(key.to_string(), Value::String(renamed));
        }
    }
    vars.insert(
        "ABIFLAGS".to_string(),
        Value::String(python.target_abiflags().to_string()),
    );
    // CPythons before 3.13 have no such variable; a GIL build's is 0.
    if python.targets_free_threaded() || vars.contains_key("Py_GIL_DISABLED") {
        vars.insert(
            "Py_GIL_DISABLED".to_string(),
            Value::from(u8::from(python.targets_free_threaded())),
        );
    }
}

/// The target's sizes and alignments where `config/targets.toml` corrects the build
/// machine's (`SIZEOF_VOID_P` 4 on i686): sysconfig carries pyconfig.h's numbers, so a
/// build that asks sysconfig for a size gets the target's.
fn set_sizes(vars: &mut BTreeMap<String, Value>, target: &Target) {
    for (name, value) in &target.data().pyconfig_define {
        let is_size = name.starts_with("SIZEOF_") || name.starts_with("ALIGNOF_");
        if let (true, Ok(number)) = (is_size, value.parse::<u64>()) {
            vars.insert(name.clone(), Value::from(number));
        }
    }
}

/// The toolchain's compilers and archiver; linking a shared object starts clean.
fn set_compilers(vars: &mut BTreeMap<String, Value>, toolchain: &Toolchain) {
    let target = &toolchain.target;
    let set = |vars: &mut BTreeMap<String, Value>, key: &str, value: String| {
        vars.insert(key.to_string(), Value::String(value));
    };
    // sysconfig knows C and C++ only; a C++ compiler the toolchain lacks keeps a name that
    // fails with "not found" rather than the host's g++ silently building x86_64 objects.
    let cc = toolchain.program_or_gnu_name(Language::C);
    let cxx = toolchain.program_or_gnu_name(Language::Cxx);
    // The host's LDSHARED carries host library paths and rpaths; the target's starts clean.
    let shared = if target.is_macos() {
        "-shared -undefined dynamic_lookup"
    } else {
        "-shared"
    };
    set(vars, "CC", cc.clone());
    set(vars, "CXX", cxx.clone());
    set(vars, "LDSHARED", format!("{cc} {shared}"));
    set(vars, "BLDSHARED", format!("{cc} {shared}"));
    set(vars, "LDCXXSHARED", format!("{cxx} {shared}"));
    set(vars, "AR", toolchain.ar.to_string_lossy().into_owned());
    set(vars, "ARFLAGS", "rcs".to_string());
    set(
        vars,
        "RANLIB",
        toolchain.ranlib.to_string_lossy().into_owned(),
    );
}

/// Compiler flags without the build python's host flags; the environment's headers are
/// the only include path, and nothing links against host libraries.
fn set_flags(vars: &mut BTreeMap<String, Value>, layout: &EnvLayout<'_>) {
    for key in [
        "CFLAGS",
        "OPT",
        "BASECFLAGS",
        "CONFIGURE_CFLAGS",
        "PY_CFLAGS",
        "CFLAGS_NODIST",
        "PY_CFLAGS_NODIST",
        // CPython's own module flags; a few projects compile with them.
        "PY_CORE_CFLAGS",
        "PY_STDMODULE_CFLAGS",
        "PY_BUILTIN_MODULE_CFLAGS",
    ] {
        if let Some(Value::String(flags)) = vars.get(key) {
            let cleaned = without_host_flags(flags);
            vars.insert(key.to_string(), Value::String(cleaned));
        }
    }
    let include_flag = format!("-I{}", layout.python_include_dir.display());
    for key in ["CPPFLAGS", "CONFIGURE_CPPFLAGS"] {
        vars.insert(key.to_string(), Value::String(include_flag.clone()));
    }
    for key in [
        "LDFLAGS",
        "CONFIGURE_LDFLAGS",
        "PY_LDFLAGS",
        "PY_LDFLAGS_NODIST",
        "LDFLAGS_NODIST",
        "LIBS",
    ] {
        vars.insert(key.to_string(), Value::String(String::new()));
    }
}

/// Header, library and pkg-config folders inside the environment.
fn set_paths(vars: &mut BTreeMap<String, Value>, layout: &EnvLayout<'_>) {
    let python_include = layout.python_include_dir.to_string_lossy().into_owned();
    let include = layout.include_dir.to_string_lossy().into_owned();
    let lib = layout.lib_dir.to_string_lossy().into_owned();
    for key in ["INCLUDEPY", "CONFINCLUDEPY"] {
        vars.insert(key.to_string(), Value::String(python_include.clone()));
    }
    for key in ["INCLUDEDIR", "CONFINCLUDEDIR"] {
        vars.insert(key.to_string(), Value::String(include.clone()));
    }
    for key in ["LIBDIR", "LIBPL"] {
        vars.insert(key.to_string(), Value::String(lib.clone()));
    }
    // meson reads the python's pkg-config files from LIBPC: the host's `python-3.X.pc`
    // names the host's headers (Debian's: the multiarch wrapper). The environment's own,
    // empty, pkg-config folder instead.
    vars.insert(
        "LIBPC".to_string(),
        Value::String(
            layout
                .lib_dir
                .join("pkgconfig")
                .to_string_lossy()
                .into_owned(),
        ),
    );
}

/// Drops the flags of the build python's CFLAGS listed in `config/targets.toml`.
pub(crate) fn without_host_flags(flags: &str) -> String {
    let rules = &targets_config().host_cflags;
    flags
        .split_whitespace()
        .filter(|flag| {
            !rules.drop_exact.iter().any(|exact| exact == flag)
                && !rules
                    .drop_prefixes
                    .iter()
                    .any(|prefix| flag.starts_with(prefix.as_str()))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Python source of a sysconfigdata module. JSON string and integer literals are valid
/// Python literals, so serde_json does the escaping.
pub(crate) fn render_module(vars: &BTreeMap<String, Value>) -> String {
    let mut source = String::from(
        "# Generated by crosswheel: the target's sysconfig for a cross build.\nbuild_time_vars = {\n",
    );
    for (key, value) in vars {
        let literal = match value {
            Value::Null => "None".to_string(),
            Value::Bool(true) => "True".to_string(),
            Value::Bool(false) => "False".to_string(),
            other => other.to_string(),
        };
        source.push_str(&format!("    {}: {literal},\n", Value::String(key.clone())));
    }
    source.push_str("}\n");
    source
}

/// `sitecustomize.py` for the cross environment's PYTHONPATH folder: points sysconfig's
/// `include`/`platinclude` paths at the environment's headers (see the file's comments).
pub(crate) fn render_sitecustomize(
    python_include_dir: &Path,
    target: &Target,
    python: &BuildPython,
    ctypes_bridge: bool,
) -> String {
    let python = python.target_python();
    let literal = Value::String(python_include_dir.to_string_lossy().into_owned()).to_string();
    let data = target.data();
    let release = target.kernel_release();
    let facts = serde_json::json!({
        "platform": data.machdep,
        "sysname": data.uname_sysname,
        "release": release.clone().unwrap_or_default(),
        "version": release.map(|release| format!("Darwin Kernel Version {release}")).unwrap_or_default(),
        "machine": target.arch(),
        "processor": data.uname_processor,
        "multiarch": target.multiarch(python),
        "mac_ver": if target.is_macos() { target.os_version().to_string() } else { String::new() },
        "abiflags": python.abiflags(),
    });
    include_str!("python_files/sitecustomize.py")
        .replace("@INCLUDE@", &literal)
        .replace("@TARGET@", &facts.to_string())
        .replace(
            "@CTYPES_BRIDGE@",
            if ctypes_bridge { "True" } else { "False" },
        )
}

/// The module that loads the target's libraries for a build's `ctypes` calls in the
/// target's CPython under qemu (its own comments say what crosses and how).
pub(crate) fn render_ctypes_bridge(
    target: &Target,
    run_program: &Path,
    runner: &super::TargetRunner,
) -> String {
    let config = serde_json::json!({
        "run_program": run_program.to_string_lossy(),
        "python": runner.python.to_string_lossy(),
        "target": target.id(),
    });
    include_str!("python_files/ctypes_bridge.py").replace("@CONFIG@", &config.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_host_tuning_debug_info_and_include_paths() {
        let cleaned = without_host_flags(
            "-Wsign-compare -DNDEBUG -g -fwrapv -O3 -Wall -march=x86-64 -I/usr/include -fcf-protection",
        );
        assert_eq!(cleaned, "-Wsign-compare -DNDEBUG -fwrapv -O3 -Wall");
    }

    /// A build that asks numpy which extended-precision types exist gets the target's
    /// answer: none for a target whose long double is a double (macOS arm64), the build
    /// machine's numpy notwithstanding. The numpy here is a stand-in with the types.
    #[test]
    #[ignore = "needs python3: scripts/test sets it up"]
    fn numpy_has_the_extended_precision_types_of_the_targets_numpy() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        let facts = serde_json::json!({
            "platform": "darwin", "sysname": "Darwin", "release": "20.0.0", "version": "",
            "machine": "arm64", "processor": "arm", "multiarch": "darwin", "mac_ver": "11.0",
            "abiflags": "",
        });
        write(
            "cross/sitecustomize.py",
            &include_str!("python_files/sitecustomize.py")
                .replace("@INCLUDE@", "'/cross/include'")
                .replace("@TARGET@", &facts.to_string())
                .replace("@CTYPES_BRIDGE@", "False"),
        );
        write(
            "cross/_crosswheel_target_import.py",
            &super::super::target_import::render(
                &Target::parse("macos-arm64").unwrap(),
                Path::new("/cross/bin/run-program"),
                None,
                crate::python_tag::PythonTag::cpython3(11),
            ),
        );
        write(
            "host/numpy/__init__.py",
            "float128 = complex256 = float96 = complex192 = object\n\
             from numpy.lib._utils_impl import get_include\n",
        );
        write("host/numpy/lib/__init__.py", "");
        write(
            "host/numpy/lib/_utils_impl.py",
            "def get_include():\n    return '/host/numpy/include'\n",
        );
        let answer = |longdouble: u32| {
            let site = dir.path().join(format!("target-{longdouble}"));
            let config = site.join("numpy/_core/include/numpy/_numpyconfig.h");
            std::fs::create_dir_all(config.parent().unwrap()).unwrap();
            std::fs::write(
                &config,
                format!("#define NPY_SIZEOF_LONGDOUBLE {longdouble}\n"),
            )
            .unwrap();
            let output = std::process::Command::new("python3")
                .args(["-c", "import numpy; print(sorted(n for n in ('float96', 'float128', 'complex192', 'complex256') if hasattr(numpy, n)), numpy.get_include())"])
                .env("PYTHONPATH", format!("{}:{}", dir.path().join("cross").display(), dir.path().join("host").display()))
                .env("CROSSWHEEL_TARGET_SITE", &site)
                .output()
                .expect("python3 runs");
            // Nothing on stderr: sitecustomize ran whole ("Error in sitecustomize" otherwise).
            assert!(
                output.status.success() && output.stderr.is_empty(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            let include = site.join("numpy/_core/include");
            String::from_utf8(output.stdout)
                .unwrap()
                .trim()
                .replace(&include.display().to_string(), "<target include>")
        };
        assert_eq!(answer(8), "[] <target include>");
        assert_eq!(answer(12), "['complex192', 'float96'] <target include>");
        assert_eq!(answer(16), "['complex256', 'float128'] <target include>");
    }

    /// The bridge's module names the target, its CPython and the script that runs it, and
    /// keeps no placeholder.
    #[test]
    fn the_ctypes_bridge_is_told_how_to_reach_the_targets_interpreter() {
        let runner = super::super::TargetRunner {
            qemu: "/q/qemu-aarch64".into(),
            root: "/root-tree".into(),
            python: "/root-tree/usr/bin/python3.11".into(),
            python_tag: crate::python_tag::PythonTag::cpython3(11),
            cpu: None,
        };
        let target = Target::parse("linux-aarch64").unwrap();
        let module = render_ctypes_bridge(&target, Path::new("/e/bin/run-program"), &runner);
        let config = module
            .lines()
            .find_map(|line| line.strip_prefix("_CONFIG = "))
            .expect("a _CONFIG line");
        let config: serde_json::Value = serde_json::from_str(config).unwrap();
        assert_eq!(config["target"], "linux-aarch64");
        assert_eq!(config["python"], "/root-tree/usr/bin/python3.11");
        assert_eq!(config["run_program"], "/e/bin/run-program");
        assert!(!module.contains("@CONFIG@"));
    }

    #[test]
    fn renders_python_literals() {
        let mut vars = BTreeMap::new();
        vars.insert(
            "A".to_string(),
            Value::String("it's \"q\" \\ \n".to_string()),
        );
        vars.insert("B".to_string(), Value::from(1));
        vars.insert("C".to_string(), Value::Null);
        let source = render_module(&vars);
        assert!(
            source.contains("    \"A\": \"it's \\\"q\\\" \\\\ \\n\",\n"),
            "{source}"
        );
        assert!(
            source.contains("    \"B\": 1,\n    \"C\": None,\n"),
            "{source}"
        );
    }
}
