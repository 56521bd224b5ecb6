//! The CUDA compiler of a Linux target: a CUDA toolkit assembled in the cache from NVIDIA's
//! wheels on the package index (config/cuda-toolkit.toml pins each one), whose nvcc
//! compiles host code with crosswheel's C++ compiler for the target.
//!
//! nvcc runs on the build machine, so its programs come from the x86_64 wheels; what a
//! build compiles against and links comes from the target's wheels, laid out under
//! `targets/<dir>` as NVIDIA's cross-compilation packages lay it out (`sbsa-linux` for
//! aarch64 servers). nvcc's host compiler is the target's C++ compiler: host code and the
//! stubs nvcc generates become target objects, and the glibc floor stays the C code's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::ToolchainError;
use super::language::{Compiler, Language};
use super::wrappers::write_script;
use crate::io_error::IoError;
use crate::support::host::run_folder::staging_in;
use crate::support::host::{
    Cache, Network, cache_key, package_index, sha256_of_file, shell_quote_path,
};
use crate::target::{Libc, Target};

const CUDA_TOOLKIT_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/cuda-toolkit.toml"
));

/// config/cuda-toolkit.toml (the file's comments describe the fields).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CudaConfig {
    arch: Vec<ArchRow>,
    never_vendored: Vec<String>,
    release: Vec<Release>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchRow {
    arch: String,
    target_dir: String,
    gpu_architectures: Vec<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Release {
    version: String,
    toolkit: String,
    always: Vec<String>,
    build: Vec<Pin>,
    target: Vec<Pin>,
}

/// One pinned wheel: a build machine's (no component) or a target component's.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Pin {
    #[serde(default)]
    component: Option<String>,
    project: String,
    #[serde(default)]
    arch: Option<String>,
    wheel: String,
    sha256: String,
    size: u64,
}

fn config() -> &'static CudaConfig {
    static CONFIG: OnceLock<CudaConfig> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(CUDA_TOOLKIT_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `the_bundled_file_parses` guards it.
        Err(err) => panic!("config/cuda-toolkit.toml is invalid: {err}"),
    })
}

/// What a build asks of CUDA: a release of config/cuda-toolkit.toml and the components it
/// compiles against beyond the release's `always` ones. Parsed once from the `cuda` and
/// `cuda-components` options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaRequest {
    version: String,
    components: Vec<String>,
}

impl CudaRequest {
    /// The request of the options: `version` names a release (`13.5`); components alone
    /// ask for the newest release. Neither: no CUDA unless the build files need it.
    pub fn parse(version: Option<&str>, components: &[String]) -> Result<Option<Self>, String> {
        let version = match version.map(str::trim).filter(|text| !text.is_empty()) {
            Some(version) => version,
            None if components.is_empty() => return Ok(None),
            None => &Self::newest().version,
        };
        let release = release_of(version)?;
        let known: Vec<&str> = release
            .target
            .iter()
            .filter_map(|pin| pin.component.as_deref())
            .collect();
        let mut wanted = Vec::new();
        for component in components {
            if !known.contains(&component.as_str()) {
                let mut names = known.clone();
                names.dedup();
                return Err(format!(
                    "cuda-components: CUDA {version} has no component `{component}` here; the ones crosswheel pins are {}",
                    names.join(", ")
                ));
            }
            if !release.always.contains(component) && !wanted.contains(component) {
                wanted.push(component.clone());
            }
        }
        wanted.sort();
        Ok(Some(CudaRequest {
            version: release.version.clone(),
            components: wanted,
        }))
    }

    /// The newest release crosswheel pins, with no components beyond its `always` ones:
    /// what a build whose CMake or meson files enable CUDA gets when the options say none.
    pub fn newest() -> Self {
        let release = config()
            .release
            .last()
            // The unit test `the_bundled_file_parses` guards it.
            .expect("config/cuda-toolkit.toml lists a release");
        CudaRequest {
            version: release.version.clone(),
            components: Vec::new(),
        }
    }

    pub fn version(&self) -> &str {
        &self.version
    }
}

impl std::fmt::Display for CudaRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CUDA {}", self.version)?;
        if !self.components.is_empty() {
            write!(f, " with {}", self.components.join(", "))?;
        }
        Ok(())
    }
}

fn release_of(version: &str) -> Result<&'static Release, String> {
    config()
        .release
        .iter()
        .find(|release| release.version == version || release.toolkit == version)
        .ok_or_else(|| {
            let known: Vec<&str> = config().release.iter().map(|r| r.version.as_str()).collect();
            let twelve = if version.starts_with("12") {
                " (CUDA 12's nvidia-cuda-nvcc-cu12 wheels hold no nvcc; install a CUDA 12 toolkit and build with the gcc toolchain, or use CUDA 13)"
            } else {
                ""
            };
            format!(
                "cuda = \"{version}\": crosswheel assembles CUDA {} from the package index{twelve}",
                known.join(", ")
            )
        })
}

/// The libraries no CUDA wheel vendors (the driver, and what users install from the
/// index's nvidia-* wheels), as globs of file names.
pub(super) fn never_vendored() -> &'static [String] {
    &config().never_vendored
}

/// The GPU architectures of `row` as CMake's `CUDAARCHS` (`80-real;...;120`) and cupy's
/// `CUPY_NVCC_GENERATE_CODE` (`arch=compute_80,code=sm_80;...`) name them: machine code for
/// each, PTX for the newest too.
fn gpu_architecture_variables(row: &ArchRow) -> [(String, String); 2] {
    let newest = row.gpu_architectures.len().saturating_sub(1);
    let cmake = row
        .gpu_architectures
        .iter()
        .enumerate()
        .map(|(index, sm)| {
            if index == newest {
                sm.clone()
            } else {
                format!("{sm}-real")
            }
        })
        .collect::<Vec<_>>()
        .join(";");
    let cupy = row
        .gpu_architectures
        .iter()
        .enumerate()
        .map(|(index, sm)| {
            if index == newest {
                format!("arch=compute_{sm},code=[sm_{sm},compute_{sm}]")
            } else {
                format!("arch=compute_{sm},code=sm_{sm}")
            }
        })
        .collect::<Vec<_>>()
        .join(";");
    [
        ("CUDAARCHS".to_string(), cmake),
        ("CUPY_NVCC_GENERATE_CODE".to_string(), cupy),
    ]
}

/// The row of `target` (its CUDA folder, `sbsa-linux`, and GPUs), or why it has none.
fn arch_row(target: &Target) -> Result<&'static ArchRow, String> {
    let served = || {
        config()
            .arch
            .iter()
            .map(|row| row.arch.as_str())
            .collect::<Vec<_>>()
            .join(" and ")
    };
    if target.linux_arch().is_none() || target.libc() != Some(Libc::Glibc) {
        return Err(format!(
            "crosswheel has CUDA only for manylinux {} targets, not for {}",
            served(),
            target.id()
        ));
    }
    config()
        .arch
        .iter()
        .find(|row| row.arch == target.arch())
        .ok_or_else(|| {
            format!(
                "NVIDIA publishes CUDA for manylinux {} only, not {}",
                served(),
                target.arch()
            )
        })
}

/// The wheels of `request` for `target`'s architecture: the build machine's, then the
/// target's components.
fn pins<'a>(release: &'a Release, request: &CudaRequest, arch: &str) -> Vec<&'a Pin> {
    let wanted = |component: &str| {
        release.always.iter().any(|name| name == component)
            || request.components.iter().any(|name| name == component)
    };
    release
        .build
        .iter()
        .chain(release.target.iter().filter(|pin| {
            pin.arch.as_deref() == Some(arch) && pin.component.as_deref().is_some_and(wanted)
        }))
        .collect()
}

/// The CUDA compiler of `target`: an `nvcc` script over the assembled toolkit, with `cxx`
/// (the toolchain's C++ compiler) as nvcc's host compiler. `zig_headers`: `cxx` compiles
/// against zig's glibc headers (see [`GLIBC_HEADERS_MACRO`]).
pub(super) fn cuda_compiler(
    cache: &Cache,
    target: &Target,
    cxx: &Path,
    zig_headers: bool,
    request: &CudaRequest,
    network: &Network,
) -> Result<Compiler, ToolchainError> {
    let missing = |reason: String| ToolchainError::CudaMissing {
        target: target.id().to_string(),
        reason,
    };
    let row = arch_row(target).map_err(missing)?;
    let dir = row.target_dir.as_str();
    let release = release_of(&request.version).map_err(missing)?;
    let pins = pins(release, request, target.arch());
    let root = toolkit(cache, target, dir, release, &pins, cxx, network).map_err(missing)?;
    let wrapper_dir = cache.toolchains().join("cuda").join("bin").join(format!(
        "{}-{}",
        target.id(),
        cache_key(&[
            root.as_os_str().as_encoded_bytes(),
            cxx.as_os_str().as_encoded_bytes()
        ])
    ));
    std::fs::create_dir_all(&wrapper_dir)
        .map_err(|err| ToolchainError::Io(IoError::new("create", wrapper_dir.clone(), err)))?;
    let nvcc = wrapper_dir.join("nvcc");
    write_script(&nvcc, &nvcc_script(&root, cxx, zig_headers, release))?;
    tracing::info!(
        "CUDA for {}: {request} (cuda-toolkit {}) from the package index, nvcc's host compiler {}",
        target.id(),
        release.toolkit,
        cxx.display()
    );
    let mut compiler = Compiler::new(Language::Cuda, nvcc);
    let root_text = root.to_string_lossy().into_owned();
    compiler.environment = BTreeMap::from([
        ("CUDA_PATH".to_string(), root_text.clone()),
        ("CUDA_HOME".to_string(), root_text.clone()),
        ("CUDAToolkit_ROOT".to_string(), root_text),
        // CMake passes it to nvcc as `-ccbin`; the script passes it itself otherwise.
        (
            "CUDAHOSTCXX".to_string(),
            cxx.to_string_lossy().into_owned(),
        ),
    ]);
    // The target's GPUs, where the user's environment does not name them.
    for (name, value) in gpu_architecture_variables(row) {
        if std::env::var_os(&name).is_none() {
            compiler.environment.insert(name, value);
        }
    }
    let build_root =
        build_machine_toolkit(cache, target, &root, release, request, network).map_err(missing)?;
    let build_root_text = build_root.to_string_lossy().into_owned();
    compiler.build_machine_environment = BTreeMap::from([
        ("CUDA_PATH".to_string(), build_root_text.clone()),
        ("CUDA_HOME".to_string(), build_root_text.clone()),
        ("CUDAToolkit_ROOT".to_string(), build_root_text),
        (
            "NVCC".to_string(),
            build_root
                .join("bin")
                .join("nvcc")
                .to_string_lossy()
                .into_owned(),
        ),
    ]);
    compiler.never_vendored = never_vendored().to_vec();
    compiler.built_with = pins
        .iter()
        .filter(|pin| pin.component.is_some())
        .map(|pin| crate::formats::sbom::Package {
            name: pin.project.clone(),
            version: pin.wheel.split('-').nth(1).unwrap_or_default().to_string(),
        })
        .collect();
    Ok(compiler)
}

/// The toolkit of the same release and components for the build machine (x86_64), which
/// the hooks that run there see, as conda-forge's cross builds install the build
/// machine's CUDA packages beside the target's: the target's own when it is x86_64, else
/// one assembled with the build machine's C compiler for its driver stub.
fn build_machine_toolkit(
    cache: &Cache,
    target: &Target,
    target_root: &Path,
    release: &Release,
    request: &CudaRequest,
    network: &Network,
) -> Result<PathBuf, String> {
    let build = Target::parse("linux-x86_64").map_err(|err| err.to_string())?;
    if target.arch() == build.arch() {
        return Ok(target_root.to_path_buf());
    }
    let row = arch_row(&build)?;
    let pins = pins(release, request, build.arch());
    let cc = crate::support::host::find_on_path("cc").ok_or_else(|| {
        "the build machine has no `cc` to compile the driver stub of its own CUDA toolkit, which the build's host hooks see; install a C compiler (Debian/Ubuntu: apt-get install gcc)".to_string()
    })?;
    toolkit(cache, &build, &row.target_dir, release, &pins, &cc, network)
}

/// The macro the `nvcc` script defines when the host compiler reads zig's glibc headers.
///
/// zig's glibc headers are glibc 2.42's, with `__GLIBC_MINOR__` set to the target's floor
/// (17) so that the functions a newer glibc added are not called. They declare C23's
/// `sinpi`, `cospi` and `rsqrt` with glibc's `noexcept`; CUDA's `crt/math_functions.h`
/// redeclares them to match only when `__GLIBC_PREREQ(2,41)`, so every CUDA compile
/// stopped at "exception specification is incompatible". The toolkit's copy of that header
/// also takes this macro as "the headers are 2.42's".
const GLIBC_HEADERS_MACRO: &str = "__CROSSWHEEL_GLIBC_HEADERS_2_42";

/// The `nvcc` script: the toolkit's nvcc with `cxx` as its host compiler unless the
/// command names one (CMake passes `CUDAHOSTCXX` as `-ccbin`), and, for a compile that
/// names no GPU architecture (meson's, setuptools', a Makefile's), the architectures of
/// `CUDAARCHS`, as CMake reads them: machine code for `N-real`, PTX for `N-virtual`, both
/// for a bare `N`.
fn nvcc_script(root: &Path, cxx: &Path, zig_headers: bool, release: &Release) -> String {
    // zig's clang as the host compiler: its glibc headers (see GLIBC_HEADERS_MACRO), and a
    // constexpr function that can never be a constant expression, which GCC (nvcc's first
    // host compiler) accepts and C++23 allows, but clang refuses by default (cupy's
    // `cupy_cub.cu` has one: `-Winvalid-constexpr`).
    let defines = if zig_headers {
        format!(
            " -D{GLIBC_HEADERS_MACRO} -Xcompiler -D{GLIBC_HEADERS_MACRO} -Xcompiler -Wno-invalid-constexpr"
        )
    } else {
        String::new()
    };
    format!(
        "#!/bin/sh\n\
         # Generated by crosswheel; rewritten on every run. nvcc of CUDA {version} (cuda-toolkit\n\
         # {toolkit}, assembled from the package index), compiling host code with the target's\n\
         # C++ compiler unless the command names another, and kernels for the GPUs CUDAARCHS\n\
         # names unless the command names some.\n\
         ccbin=0\n\
         sources=0\n\
         architectures=0\n\
         compile=0\n\
         for arg in \"$@\"; do\n  \
           case \"$arg\" in\n    \
             -ccbin|-ccbin=*|--compiler-bindir|--compiler-bindir=*) ccbin=1 ;;\n    \
             -c|--compile|-dc|--device-c|-dw|--device-w) compile=1 ;;\n    \
             -arch|-arch=*|--gpu-architecture|--gpu-architecture=*|-gencode|-gencode=*|--generate-code|--generate-code=*|-code|-code=*|--gpu-code|--gpu-code=*) architectures=1 ;;\n    \
             -*) ;;\n    \
             *.cu) sources=1 ;;\n  \
           esac\n\
         done\n\
         if [ \"$sources\" = 1 ] && [ \"$architectures\" = 0 ] && [ -n \"$CUDAARCHS\" ]; then\n  \
           set -f\n  \
           saved_ifs=$IFS\n  \
           IFS=';'\n  \
           for entry in $CUDAARCHS; do\n    \
             case \"$entry\" in\n      \
               all|all-major|native) ;;\n      \
               *-real) sm=${{entry%-real}}; set -- \"$@\" \"-gencode=arch=compute_$sm,code=sm_$sm\" ;;\n      \
               *-virtual) sm=${{entry%-virtual}}; set -- \"$@\" \"-gencode=arch=compute_$sm,code=compute_$sm\" ;;\n      \
               *) set -- \"$@\" \"-gencode=arch=compute_$entry,code=[sm_$entry,compute_$entry]\" ;;\n    \
             esac\n  \
           done\n  \
           IFS=$saved_ifs\n  \
           set +f\n\
         fi\n\
         if [ \"$ccbin\" = 0 ]; then set -- -ccbin {cxx} \"$@\"; fi\n\
         # Intermediate files beside the object, named after it: in /tmp they are named\n\
         # after nvcc's process id, and the objects embed those names.\n\
         if [ \"$compile\" = 1 ]; then set -- --objdir-as-tempdir \"$@\"; fi\n\
         exec {nvcc}{defines} \"$@\"\n",
        version = release.version,
        toolkit = release.toolkit,
        nvcc = shell_quote_path(&root.join("bin").join("nvcc")),
        cxx = shell_quote_path(cxx),
    )
}

/// The toolkit's root for `target`, assembled once from `pins`.
fn toolkit(
    cache: &Cache,
    target: &Target,
    dir: &str,
    release: &Release,
    pins: &[&Pin],
    cxx: &Path,
    network: &Network,
) -> Result<PathBuf, String> {
    let parent = cache.toolchains().join("cuda");
    let mut names: Vec<&[u8]> = pins.iter().map(|pin| pin.sha256.as_bytes()).collect();
    names.push(LAYOUT.as_bytes());
    let root = parent.join(format!(
        "{}-{}-{}",
        release.version,
        target.arch(),
        cache_key(&names)
    ));
    if root.join("bin").join("nvcc").is_file() {
        return Ok(root);
    }
    std::fs::create_dir_all(&parent)
        .map_err(|err| IoError::new("create", parent.clone(), err).to_string())?;
    let started = std::time::Instant::now();
    let wheels = fetch_wheels(&parent, target, release, pins, network)?;
    let scratch = staging_in(&parent, ".toolkit-")
        .map_err(|err| IoError::new("create a folder in", parent.clone(), err).to_string())?;
    let staged = scratch.path().join("root");
    for (pin, wheel) in pins.iter().zip(&wheels) {
        let part = if pin.component.is_some() {
            Part::Target(dir)
        } else {
            Part::Build(dir)
        };
        extract(wheel, &staged, part)?;
    }
    adjust_math_header(&staged.join("targets").join(dir).join("include"))?;
    write_layout(&staged, dir)?;
    write_driver_stub(&staged.join("targets").join(dir), cxx)?;
    match std::fs::rename(&staged, &root) {
        Ok(()) => {}
        // Another build made it first: theirs is the same bytes.
        Err(_) if root.join("bin").join("nvcc").is_file() => {}
        Err(err) => return Err(IoError::new("move into place", root, err).to_string()),
    }
    tracing::info!(
        "assembled CUDA {} for {} in {:.1} s",
        release.version,
        target.id(),
        started.elapsed().as_secs_f64()
    );
    Ok(root)
}

/// The pinned wheels, from the cache's `wheels` folder or downloaded into it, announced
/// in one line first.
fn fetch_wheels(
    parent: &Path,
    target: &Target,
    release: &Release,
    pins: &[&Pin],
    network: &Network,
) -> Result<Vec<PathBuf>, String> {
    let folder = parent.join("wheels");
    std::fs::create_dir_all(&folder)
        .map_err(|err| IoError::new("create", folder.clone(), err).to_string())?;
    let paths: Vec<PathBuf> = pins.iter().map(|pin| folder.join(&pin.wheel)).collect();
    let absent: Vec<(&Pin, &PathBuf)> = pins
        .iter()
        .copied()
        .zip(&paths)
        .filter(|(pin, path)| {
            sha256_of_file(path)
                .map(|sha| sha != pin.sha256)
                .unwrap_or(true)
        })
        .collect();
    if absent.is_empty() {
        return Ok(paths);
    }
    let bytes: u64 = absent.iter().map(|(pin, _)| pin.size).sum();
    tracing::info!(
        "downloading CUDA {} for {}: {} wheels of NVIDIA's, {:.0} MB, pinned by SHA-256 in config/cuda-toolkit.toml ({})",
        release.version,
        target.id(),
        absent.len(),
        bytes as f64 / 1e6,
        absent
            .iter()
            .map(|(pin, _)| pin.project.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (pin, path) in absent {
        let partial = path.with_extension("part");
        package_index::download_pinned(&pin.project, &pin.wheel, &pin.sha256, &partial, network)?;
        std::fs::rename(&partial, path)
            .map_err(|err| IoError::new("move into place", path.clone(), err).to_string())?;
    }
    Ok(paths)
}

/// Which side of the toolkit a wheel supplies.
#[derive(Debug, Clone, Copy)]
enum Part<'a> {
    /// nvcc and the programs it runs, for the build machine; their headers are the target's.
    Build(&'a str),
    /// Headers and libraries for `targets/<dir>`.
    Target(&'a str),
}

/// Where a wheel's `nvidia/cu13/<path>` goes in the toolkit, or `None` to leave it out.
fn destination(part: Part<'_>, path: &str) -> Option<PathBuf> {
    let (top, rest) = path.split_once('/')?;
    if rest.is_empty() {
        return None;
    }
    match (part, top) {
        (Part::Build(_), "bin" | "nvvm") => Some(Path::new(top).join(rest)),
        // libnvvm, which cicc's users load, as a classic toolkit keeps it.
        (Part::Build(_), "lib") => Some(Path::new("nvvm").join("lib64").join(rest)),
        (Part::Build(dir) | Part::Target(dir), "include") => {
            Some(Path::new("targets").join(dir).join("include").join(rest))
        }
        (Part::Target(dir), "lib") => Some(Path::new("targets").join(dir).join("lib").join(rest)),
        _ => None,
    }
}

/// Unpacks the toolkit's files of `wheel` into `root`, keeping their modes.
fn extract(wheel: &Path, root: &Path, part: Part<'_>) -> Result<(), String> {
    package_index::unpack_members(wheel, root, |name| {
        let inside = name.strip_prefix("nvidia/cu13").ok()?;
        destination(part, &inside.to_string_lossy())
    })
}

/// Lets `crt/math_functions.h` take [`GLIBC_HEADERS_MACRO`] for glibc 2.41's and 2.42's
/// checks; a header without them (another CUDA release) is refused, not silently left.
fn adjust_math_header(include: &Path) -> Result<(), String> {
    let path = include.join("crt").join("math_functions.h");
    let text = std::fs::read_to_string(&path)
        .map_err(|err| IoError::new("read", path.clone(), err).to_string())?;
    let mut adjusted = text.clone();
    for minor in ["41", "42"] {
        let check = format!("__GLIBC_PREREQ(2,{minor})");
        if !adjusted.contains(&check) {
            return Err(format!(
                "{} has no `{check}`, which crosswheel adjusts for zig's glibc headers: this CUDA release needs a new rule in src/stages/toolchain/cuda.rs",
                path.display()
            ));
        }
        adjusted = adjusted.replace(
            &check,
            &format!("({check} || defined({GLIBC_HEADERS_MACRO}))"),
        );
    }
    std::fs::write(&path, adjusted).map_err(|err| IoError::new("write", path, err).to_string())
}

/// nvcc's profile for the target's folder, and the `include` and `lib64` links that tools
/// reading `CUDA_PATH` (cupy, FindCUDAToolkit) look for.
/// What the toolkit's own files are, beyond the wheels' contents: part of its cache key,
/// so a toolkit laid out by an older crosswheel is laid out again.
const LAYOUT: &str = "layout 2: nvcc.profile, crosswheel/cudafe++ and crosswheel/cicc";

/// The folder of the toolkit that holds crosswheel's wrappers of nvcc's front ends.
const FRONT_END_WRAPPERS: &str = "crosswheel";

/// A wrapper of `tool` (in the toolkit's `folder`) that names the source by its path
/// inside the build's folder: cudafe++ and cicc derive the names of anonymous namespaces
/// (`_GLOBAL__N__<hash>`) from `--orig_src_path_name`, the source's absolute path, which
/// inside a build is crosswheel's temporary copy of the project, so every build would name
/// them anew. The map is the one the compiler wrappers give clang (`-ffile-prefix-map`).
fn front_end_wrapper(folder: &str, tool: &str) -> String {
    format!(
        "#!/bin/sh\n\
         # Written by crosswheel: {tool} with the source named relative to the build's folder.\n\
         real=\"$(dirname \"$0\")/../{folder}/{tool}\"\n\
         if [ -n \"$CROSSWHEEL_SOURCE_DIR\" ]; then\n  \
           map=0\n  \
           for arg do\n    \
             shift\n    \
             if [ \"$map\" = 1 ]; then\n      \
               case \"$arg\" in \"$CROSSWHEEL_SOURCE_DIR\"/*) arg=\".${{arg#\"$CROSSWHEEL_SOURCE_DIR\"}}\" ;; esac\n      \
               map=0\n    \
             fi\n    \
             if [ \"$arg\" = --orig_src_path_name ]; then map=1; fi\n    \
             set -- \"$@\" \"$arg\"\n  \
           done\n\
         fi\n\
         exec \"$real\" \"$@\"\n"
    )
}

fn write_layout(root: &Path, dir: &str) -> Result<(), String> {
    let wrappers = root.join(FRONT_END_WRAPPERS);
    std::fs::create_dir_all(&wrappers)
        .map_err(|err| IoError::new("create", wrappers.clone(), err).to_string())?;
    for (folder, tool) in [("bin", "cudafe++"), ("nvvm/bin", "cicc")] {
        let path = wrappers.join(tool);
        write_script(&path, &front_end_wrapper(folder, tool)).map_err(|err| err.to_string())?;
    }
    let target = format!("$(TOP)/targets/{dir}");
    let profile = format!(
        "# Written by crosswheel: nvcc's own profile, with headers and libraries from the\n\
         # target's folder, and cudafe++ and cicc through crosswheel's wrappers.\n\
         TOP              = $(_HERE_)/..\n\
         CICC_PATH        = $(TOP)/{FRONT_END_WRAPPERS}\n\
         NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice\n\
         LD_LIBRARY_PATH += $(TOP)/nvvm/lib64:\n\
         PATH            += $(CICC_PATH):$(TOP)/nvvm/bin:$(_HERE_):\n\
         INCLUDES        +=  \"-I{target}/include\" $(_SPACE_)\n\
         SYSTEM_INCLUDES +=  \"-isystem\" \"{target}/include/cccl\" $(_SPACE_)\n\
         LIBRARIES        =+ $(_SPACE_) \"-L{target}/lib/stubs\" \"-L{target}/lib\"\n\
         CUDAFE_FLAGS    +=\n\
         PTXAS_FLAGS     +=\n"
    );
    let path = root.join("bin").join("nvcc.profile");
    std::fs::write(&path, profile).map_err(|err| IoError::new("write", path, err).to_string())?;
    for (link, to) in [("include", "include"), ("lib64", "lib")] {
        let path = root.join(link);
        std::os::unix::fs::symlink(Path::new("targets").join(dir).join(to), &path)
            .map_err(|err| IoError::new("link", path, err).to_string())?;
    }
    if !root.join("bin").join("nvcc").is_file() {
        return Err("the pinned nvcc wheel holds no bin/nvcc".to_string());
    }
    link_development_names(&root.join("targets").join(dir).join("lib"))
}

/// `lib/stubs/libcuda.so`, as NVIDIA's toolkits ship it: a library named `libcuda.so.1`
/// that defines every function `cuda.h` declares (old and `_v2` names alike), so a build
/// links `-lcuda` (CMake's `CUDA::cuda_driver`, cupy's jitify) on a machine without the
/// driver; the wheel then loads the user's driver, which the repair never vendors. NVIDIA's
/// wheels carry no stub, so it is compiled here with the target's compiler.
fn write_driver_stub(target_root: &Path, cxx: &Path) -> Result<(), String> {
    let include = target_root.join("include");
    let preprocessed = run_compiler(
        cxx,
        &[
            "-E".as_ref(),
            "-P".as_ref(),
            "-x".as_ref(),
            "c".as_ref(),
            "-D__CUDA_API_VERSION_INTERNAL".as_ref(),
            format!("-I{}", include.display()).as_ref(),
            include.join("cuda.h").as_os_str(),
        ],
        "preprocess cuda.h for the driver stub",
    )?;
    let names = driver_functions(&preprocessed);
    if names.len() < 100 {
        return Err(format!(
            "cuda.h declares {} driver functions, too few for a driver stub",
            names.len()
        ));
    }
    let stubs = target_root.join("lib").join("stubs");
    std::fs::create_dir_all(&stubs)
        .map_err(|err| IoError::new("create", stubs.clone(), err).to_string())?;
    let source = stubs.join("libcuda.c");
    let text: String = std::iter::once(
        "/* Generated by crosswheel: the CUDA driver's functions, for linking only. */\n"
            .to_string(),
    )
    .chain(
        names
            .iter()
            .map(|name| format!("int {name}(void) {{ return 999; }}\n")),
    )
    .collect();
    std::fs::write(&source, text)
        .map_err(|err| IoError::new("write", source.clone(), err).to_string())?;
    let library = stubs.join("libcuda.so");
    run_compiler(
        cxx,
        &[
            "-x".as_ref(),
            "c".as_ref(),
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-nostdlib".as_ref(),
            "-Wl,-soname,libcuda.so.1".as_ref(),
            "-o".as_ref(),
            library.as_os_str(),
            source.as_os_str(),
        ],
        "compile the driver stub",
    )?;
    // Also in `lib`, where builds that search only `$CUDA_PATH/lib64` (cupy's) look: the
    // stub is never loaded, for programs load `libcuda.so.1`, a name the toolkit never has.
    let link = target_root.join("lib").join("libcuda.so");
    std::os::unix::fs::symlink(Path::new("stubs").join("libcuda.so"), &link)
        .map_err(|err| IoError::new("link", link, err).to_string())
}

/// Runs `compiler` with `args`: its standard output, or why it failed to `purpose`, in
/// one line.
fn run_compiler(
    compiler: &Path,
    args: &[&std::ffi::OsStr],
    purpose: &str,
) -> Result<String, String> {
    let output = std::process::Command::new(compiler)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| format!("cannot run {}: {err}", compiler.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} cannot {purpose}: {}",
            compiler.display(),
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .next()
                .unwrap_or_default()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The driver functions a preprocessed `cuda.h` declares (`CUresult CUDAAPI cuInit(...)`).
fn driver_functions(preprocessed: &str) -> Vec<String> {
    let flat = preprocessed.replace('\n', " ");
    let mut names: Vec<String> = flat
        .split(';')
        .filter_map(|declaration| {
            let declaration = declaration.trim();
            if !declaration.contains("CUresult") {
                return None;
            }
            let head = declaration.split('(').next()?;
            let name = head.split_whitespace().last()?;
            (name.starts_with("cu")
                && name[2..].starts_with(|c: char| c.is_ascii_uppercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `libcudart.so` → `libcudart.so.13` for each library: NVIDIA's wheels ship only the
/// names programs load, and `-lcudart` looks for the development name a toolkit has.
fn link_development_names(lib: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(lib)
        .map_err(|err| IoError::new("read", lib.to_path_buf(), err).to_string())?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in &names {
        let Some((stem, _)) = name.split_once(".so.") else {
            continue;
        };
        let development = format!("{stem}.so");
        let path = lib.join(&development);
        if names.contains(&development) || path.exists() {
            continue;
        }
        std::os::unix::fs::symlink(name, &path)
            .map_err(|err| IoError::new("link", path, err).to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_file_parses() {
        assert!(!config().release.is_empty());
        for release in &config().release {
            assert!(!release.build.is_empty());
            for pin in release.build.iter().chain(&release.target) {
                assert_eq!(pin.sha256.len(), 64, "{}", pin.wheel);
                assert!(
                    pin.wheel.starts_with(&pin.project.replace('-', "_")),
                    "{}",
                    pin.wheel
                );
            }
            for component in &release.always {
                for row in &config().arch {
                    assert!(
                        release
                            .target
                            .iter()
                            .any(|pin| pin.component.as_ref() == Some(component)
                                && pin.arch.as_deref() == Some(row.arch.as_str())),
                        "{component} for {}",
                        row.arch
                    );
                }
            }
        }
    }

    #[test]
    fn a_request_names_a_pinned_release_and_its_components() {
        let request = CudaRequest::parse(Some("13.5"), &["cublas".into(), "cudart".into()])
            .unwrap()
            .unwrap();
        assert_eq!(request.to_string(), "CUDA 13.5 with cublas");
        assert_eq!(CudaRequest::parse(None, &[]).unwrap(), None);
        let implied = CudaRequest::parse(None, &["curand".into()])
            .unwrap()
            .unwrap();
        assert_eq!(implied.version(), CudaRequest::newest().version());
        let twelve = CudaRequest::parse(Some("12.9"), &[]).unwrap_err();
        assert!(twelve.contains("hold no nvcc"), "{twelve}");
        let unknown = CudaRequest::parse(Some("13.5"), &["cudnn".into()]).unwrap_err();
        assert!(
            unknown.starts_with("cuda-components: CUDA 13.5 has no component `cudnn`"),
            "{unknown}"
        );
    }

    #[test]
    fn aarch64_servers_get_sbsa_and_other_targets_a_reason() {
        let aarch64 = Target::parse("linux-aarch64").unwrap();
        assert_eq!(arch_row(&aarch64).unwrap().target_dir, "sbsa-linux");
        let x86_64 = Target::parse("linux-x86_64").unwrap();
        assert_eq!(arch_row(&x86_64).unwrap().target_dir, "x86_64-linux");
        for id in ["macos-arm64", "musllinux-aarch64", "linux-ppc64le"] {
            let reason = arch_row(&Target::parse(id).unwrap()).unwrap_err();
            assert!(reason.contains("aarch64 and x86_64"), "{id}: {reason}");
        }
    }

    #[test]
    fn sbsa_kernels_are_for_data_centre_gpus_with_ptx_of_the_newest() {
        let row = arch_row(&Target::parse("linux-aarch64").unwrap()).unwrap();
        let [(cmake, archs), (cupy, codes)] = gpu_architecture_variables(row);
        assert_eq!(cmake, "CUDAARCHS");
        assert_eq!(archs, "80-real;90-real;100-real;120");
        assert_eq!(cupy, "CUPY_NVCC_GENERATE_CODE");
        assert_eq!(
            codes,
            "arch=compute_80,code=sm_80;arch=compute_90,code=sm_90;arch=compute_100,code=sm_100;arch=compute_120,code=[sm_120,compute_120]"
        );
    }

    #[test]
    fn a_target_gets_the_build_wheels_and_its_own_components_only() {
        let release = &config().release[0];
        let request = CudaRequest::parse(Some(&release.version), &["nvrtc".into()])
            .unwrap()
            .unwrap();
        let chosen = pins(release, &request, "aarch64");
        assert!(chosen.iter().any(|pin| pin.project == "nvidia-cuda-nvcc"));
        assert!(
            chosen
                .iter()
                .any(|pin| pin.component.as_deref() == Some("nvrtc"))
        );
        assert!(
            !chosen
                .iter()
                .any(|pin| pin.component.as_deref() == Some("cublas"))
        );
        assert!(
            chosen
                .iter()
                .filter(|pin| pin.component.is_some())
                .all(|pin| pin.arch.as_deref() == Some("aarch64"))
        );
    }

    #[test]
    fn build_programs_and_target_files_go_to_their_folders() {
        let build = Part::Build("sbsa-linux");
        let target = Part::Target("sbsa-linux");
        assert_eq!(
            destination(build, "bin/nvcc"),
            Some(PathBuf::from("bin/nvcc"))
        );
        assert_eq!(
            destination(build, "lib/libnvvm.so.4"),
            Some(PathBuf::from("nvvm/lib64/libnvvm.so.4"))
        );
        assert_eq!(
            destination(target, "lib/libcudart_static.a"),
            Some(PathBuf::from("targets/sbsa-linux/lib/libcudart_static.a"))
        );
        assert_eq!(
            destination(target, "include/cuda_runtime.h"),
            Some(PathBuf::from("targets/sbsa-linux/include/cuda_runtime.h"))
        );
        assert_eq!(destination(target, "bin/nvcc"), None);
        assert_eq!(destination(target, "cccl/LICENSE"), None);
    }

    #[test]
    fn the_driver_stub_defines_each_declared_driver_function_once() {
        let preprocessed = "typedef int CUresult;\nCUresult cuInit(unsigned int Flags);\n\
            CUresult  cuMemAlloc_v2(CUdeviceptr *dptr,\n size_t bytesize);\n\
            CUresult cuInit(unsigned int Flags);\nint cudaNotDriver(void);\n\
            typedef CUresult (*PFN_cuInit)(unsigned int);\n";
        assert_eq!(driver_functions(preprocessed), ["cuInit", "cuMemAlloc_v2"]);
    }

    #[test]
    fn each_shipped_library_gets_its_development_name() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "libcudart.so.13",
            "libcudart_static.a",
            "libcublasLt.so.13",
            "libx.so",
            "libx.so.1",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        link_development_names(dir.path()).unwrap();
        let link = |name: &str| std::fs::read_link(dir.path().join(name)).ok();
        assert_eq!(link("libcudart.so"), Some(PathBuf::from("libcudart.so.13")));
        assert_eq!(
            link("libcublasLt.so"),
            Some(PathBuf::from("libcublasLt.so.13"))
        );
        assert_eq!(link("libx.so"), None);
    }

    #[test]
    fn the_math_header_takes_the_macro_for_both_glibc_checks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("crt")).unwrap();
        let header = dir.path().join("crt/math_functions.h");
        std::fs::write(
            &header,
            "#if __GLIBC_PREREQ(2,41) && X\n#if __GLIBC_PREREQ(2,42)\n",
        )
        .unwrap();
        adjust_math_header(dir.path()).unwrap();
        let text = std::fs::read_to_string(&header).unwrap();
        assert!(text.contains(
            "#if (__GLIBC_PREREQ(2,41) || defined(__CROSSWHEEL_GLIBC_HEADERS_2_42)) && X\n"
        ));
        std::fs::write(&header, "#if 1\n").unwrap();
        assert!(
            adjust_math_header(dir.path())
                .unwrap_err()
                .contains("new rule")
        );
    }

    #[test]
    fn nvcc_gets_the_target_compiler_unless_the_command_names_one() {
        let release = &config().release[0];
        let script = nvcc_script(Path::new("/k"), Path::new("/w/c++"), true, release);
        assert!(
            script.contains(
                "exec /k/bin/nvcc -D__CROSSWHEEL_GLIBC_HEADERS_2_42 -Xcompiler -D__CROSSWHEEL_GLIBC_HEADERS_2_42 -Xcompiler -Wno-invalid-constexpr \"$@\"\n"
            ),
            "{script}"
        );
        assert!(script.contains("if [ \"$ccbin\" = 0 ]; then set -- -ccbin /w/c++ \"$@\"; fi"));
        let gcc = nvcc_script(Path::new("/k"), Path::new("/g++"), false, release);
        assert!(gcc.contains("exec /k/bin/nvcc \"$@\"\n"), "{gcc}");
    }

    /// The script run by sh with `nvcc` replaced by `echo`: the arguments nvcc would get.
    fn nvcc_arguments(args: &[&str], cudaarchs: Option<&str>) -> String {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        let echo = dir.path().join("bin/nvcc");
        std::fs::write(&echo, "#!/bin/sh\necho \"$@\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&echo, std::fs::Permissions::from_mode(0o755)).unwrap();
        let script = nvcc_script(dir.path(), Path::new("/w/c++"), false, &config().release[0]);
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(&script).arg("nvcc").args(args);
        command.env_remove("CUDAARCHS");
        if let Some(archs) = cudaarchs {
            command.env("CUDAARCHS", archs);
        }
        let output = command.output().unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn a_compile_naming_no_gpu_gets_cudaarchs_and_one_naming_some_keeps_them() {
        assert_eq!(
            nvcc_arguments(&["-c", "k.cu", "-o", "k.o"], Some("80-real;90-virtual;120")),
            "--objdir-as-tempdir -ccbin /w/c++ -c k.cu -o k.o -gencode=arch=compute_80,code=sm_80 \
             -gencode=arch=compute_90,code=compute_90 -gencode=arch=compute_120,code=[sm_120,compute_120]"
        );
        assert_eq!(
            nvcc_arguments(&["-c", "k.cu", "-arch=sm_90"], Some("80-real")),
            "--objdir-as-tempdir -ccbin /w/c++ -c k.cu -arch=sm_90"
        );
        assert_eq!(
            nvcc_arguments(&["--version"], Some("80-real")),
            "-ccbin /w/c++ --version"
        );
        assert_eq!(
            nvcc_arguments(&["-ccbin=/g++", "-c", "k.cu"], None),
            "--objdir-as-tempdir -ccbin=/g++ -c k.cu"
        );
        // A link names no intermediate files.
        assert_eq!(
            nvcc_arguments(&["k.o", "-o", "k.so", "-shared"], None),
            "-ccbin /w/c++ k.o -o k.so -shared"
        );
    }

    #[test]
    fn nvccs_front_ends_see_the_source_by_its_path_inside_the_build() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("bin/cudafe++");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "#!/bin/sh\necho \"$@\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let wrapper = root.path().join(FRONT_END_WRAPPERS).join("cudafe++");
        std::fs::create_dir_all(wrapper.parent().unwrap()).unwrap();
        std::fs::write(&wrapper, front_end_wrapper("bin", "cudafe++")).unwrap();
        let run = |source_dir: Option<&str>| {
            let mut command = std::process::Command::new("sh");
            command.arg(&wrapper).args([
                "--orig_src_file_name",
                "k.cu",
                "--orig_src_path_name",
                "/tmp/copy-x1/pkg/k.cu",
                "k.cpp1.ii",
            ]);
            command.env_remove("CROSSWHEEL_SOURCE_DIR");
            if let Some(dir) = source_dir {
                command.env("CROSSWHEEL_SOURCE_DIR", dir);
            }
            let output = command.output().unwrap();
            assert!(output.status.success(), "{output:?}");
            String::from_utf8(output.stdout).unwrap().trim().to_string()
        };
        assert_eq!(
            run(Some("/tmp/copy-x1")),
            "--orig_src_file_name k.cu --orig_src_path_name ./pkg/k.cu k.cpp1.ii"
        );
        // Outside a build the path stays as nvcc gave it.
        assert_eq!(
            run(None),
            "--orig_src_file_name k.cu --orig_src_path_name /tmp/copy-x1/pkg/k.cu k.cpp1.ii"
        );
    }
}
