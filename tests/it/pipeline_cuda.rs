//! CUDA through the whole pipeline: examples/cudaproj (scikit-build-core, a kernel and a
//! Python module in one `.cu` file) gets nvcc because its CMake project enables CUDA; the
//! toolkit is assembled from NVIDIA's pinned wheels, nvcc compiles host code with the
//! target's zig C++ compiler, the wheels carry machine code for the target's GPUs, and
//! under qemu-user (x86_64 natively) the extension imports and CUDA answers with its own
//! no-driver error. A meson build gets the same architectures; the CUDA runtime linked as a
//! shared library is left to the user's nvidia-* wheel; a macOS target stops in one line.

use std::path::Path;
use std::process::Command;

use crate::common::{self, crosswheel_bin};

fn build(project: &Path, only: Option<&str>, out: &Path) -> std::process::Output {
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("build")
        .arg(project)
        .arg("-w")
        .arg(out)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .env_remove("CUDAARCHS");
    if let Some(only) = only {
        command.args(["--only", only]);
    }
    command.output().expect("run crosswheel build")
}

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cudaproj")
}

/// The toolkit's `cuobjdump` for `arch`, which the build assembled in the cache.
fn cuobjdump(arch: &str) -> std::path::PathBuf {
    let toolchains = crosswheel::support::host::Cache::from_env()
        .expect("a cache directory")
        .toolchains()
        .join("cuda");
    std::fs::read_dir(&toolchains)
        .unwrap_or_else(|err| panic!("{}: {err}", toolchains.display()))
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(&format!("13.5-{arch}-")))
        })
        .map(|root| root.join("bin/cuobjdump"))
        .unwrap_or_else(|| {
            panic!(
                "no CUDA 13.5 toolkit for {arch} in {}",
                toolchains.display()
            )
        })
}

/// The GPU code of the extension module in `wheel`: `cuobjdump`'s lines for its machine
/// code (`sm_80.cubin`) and PTX (`sm_120.ptx`), and its ELF machine number.
fn gpu_code(wheel: &Path, arch: &str) -> (Vec<String>, u16) {
    let dir = tempfile::tempdir().unwrap();
    common::unzip_to(wheel, dir.path());
    let module = walkdir::WalkDir::new(dir.path())
        .into_iter()
        .map(|entry| entry.unwrap().into_path())
        .find(|path| path.extension().is_some_and(|ext| ext == "so"))
        .unwrap_or_else(|| panic!("{} has no extension module", wheel.display()));
    let mut kernels = Vec::new();
    for flag in ["--list-elf", "--list-ptx"] {
        let output = Command::new(cuobjdump(arch))
            .arg(flag)
            .arg(&module)
            .output()
            .expect("run cuobjdump");
        assert!(output.status.success(), "{output:?}");
        kernels.extend(
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter_map(|line| {
                    line.rsplit('.').nth(1).map(|sm| {
                        let kind = line.rsplit('.').next().unwrap_or_default();
                        format!("{sm}.{kind}")
                    })
                }),
        );
    }
    let bytes = std::fs::read(&module).unwrap();
    (kernels, u16::from_le_bytes([bytes[18], bytes[19]]))
}

const AARCH64_ELF: u16 = 183;
const X86_64_ELF: u16 = 62;

#[test]
#[ignore = "slow: examples/cudaproj for aarch64 and x86_64 (CUDA's wheels, nvcc, zig, qemu)"]
fn cuda_example_builds_for_aarch64_and_x86_64_and_cuda_answers_without_a_gpu() {
    let out = tempfile::tempdir().unwrap();
    let output = build(&example(), None, out.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "build of cudaproj failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("CUDA for linux-aarch64: CUDA 13.5 (cuda-toolkit 13.5.0)"),
        "{stderr}"
    );
    // The runtime is linked in and loads the driver itself: glibc 2.17 is the floor.
    let wheels = common::wheel_names_in(out.path());
    assert_eq!(
        wheels,
        [
            "cudaproj-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "cudaproj-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        ]
    );
    let (aarch64, machine) = gpu_code(&out.path().join(&wheels[0]), "aarch64");
    assert_eq!(machine, AARCH64_ELF);
    assert_eq!(
        aarch64,
        [
            "sm_80.cubin",
            "sm_90.cubin",
            "sm_100.cubin",
            "sm_120.cubin",
            "sm_120.ptx"
        ]
    );
    let (x86_64, machine) = gpu_code(&out.path().join(&wheels[1]), "x86_64");
    assert_eq!(machine, X86_64_ELF);
    assert_eq!(x86_64.len(), 8, "{x86_64:?}");
    assert!(x86_64.contains(&"sm_75.cubin".to_string()), "{x86_64:?}");
    // The runtime linked in and the headers compiled against are in the SBOM.
    let dir = tempfile::tempdir().unwrap();
    common::unzip_to(&out.path().join(&wheels[0]), dir.path());
    let sbom = std::fs::read_to_string(
        dir.path()
            .join("cudaproj-0.1.0.dist-info/sboms/crosswheel.cdx.json"),
    )
    .unwrap();
    for purl in [
        "pkg:pypi/nvidia-cuda-runtime@13.5.37",
        "pkg:pypi/nvidia-cuda-cccl@13.3.5.0.6",
        "pkg:pypi/nvidia-cuda-crt@13.5.37",
    ] {
        assert!(sbom.contains(purl), "{purl}: {sbom}");
    }
    // Each suite ran: the runtime's version, and CUDA's own no-driver answer.
    assert_eq!(stdout.matches("2 passed in ").count(), 2, "{stdout}");

    // The same inputs give the same bytes.
    let again = tempfile::tempdir().unwrap();
    let output = build(&example(), Some("cp311-manylinux_aarch64"), again.path());
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        std::fs::read(out.path().join(&wheels[0])).unwrap(),
        std::fs::read(again.path().join(&wheels[0])).unwrap(),
        "the aarch64 wheel differs between two builds"
    );
}

/// meson's CUDA compiler sees the same nvcc through the cross file, and a compile that
/// names no GPU gets the target's; the CUDA runtime linked as a shared library stays a
/// dependency (users install it from the index's nvidia-cuda-runtime wheel), as
/// auditwheel leaves it with `--exclude libcudart.so.13`, and so does the driver that
/// `-lcuda` links through the toolkit's stub.
#[test]
#[ignore = "slow: a meson CUDA build for aarch64 (CUDA's wheels, nvcc, zig)"]
fn a_meson_cuda_build_gets_the_targets_gpus_and_leaves_the_shared_runtime_to_the_user() {
    let example = example();
    let saxpy = std::fs::read_to_string(example.join("src/_saxpy.cu")).unwrap();
    let project = tempfile::tempdir().unwrap();
    common::write_project(
        project.path(),
        &[
            ("src/_saxpy.cu", &saxpy),
            (
                "meson.build",
                "project('mcuda', 'cpp', 'cuda', version: '0.1.0')\n\
                 py = import('python').find_installation(pure: false)\n\
                 py.extension_module('_saxpy', 'src/_saxpy.cu', install: true,\n  \
                 link_args: ['-cudart=shared', '-lcuda'])\n",
            ),
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"meson-python>=0.15\"]\nbuild-backend = \"mesonpy\"\n\
                 [project]\nname = \"mcuda\"\nversion = \"0.1.0\"\n\
                 [tool.crosswheel]\npython = [\"cp311\"]\narchs = [\"manylinux_aarch64\"]\n",
            ),
        ],
    );
    let out = tempfile::tempdir().unwrap();
    common::build_succeeds(project.path(), out.path());
    let wheels = common::wheel_names_in(out.path());
    assert_eq!(
        wheels,
        ["mcuda-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"]
    );
    let wheel = out.path().join(&wheels[0]);
    let (kernels, machine) = gpu_code(&wheel, "aarch64");
    assert_eq!(machine, AARCH64_ELF);
    assert_eq!(
        kernels,
        [
            "sm_80.cubin",
            "sm_90.cubin",
            "sm_100.cubin",
            "sm_120.cubin",
            "sm_120.ptx"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    common::unzip_to(&wheel, dir.path());
    assert!(
        !dir.path().join("mcuda.libs").exists(),
        "the CUDA runtime was vendored"
    );
    let module = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "so"))
        .unwrap();
    let needed = String::from_utf8_lossy(&std::fs::read(&module).unwrap()).into_owned();
    assert!(
        needed.contains("libcudart.so.13"),
        "not linked to the shared runtime"
    );
}

#[test]
#[ignore = "slow: resolves the macOS toolchain (zig) before refusing CUDA"]
fn a_target_without_cuda_stops_in_one_line_before_its_build() {
    let out = tempfile::tempdir().unwrap();
    let output = build(&example(), Some("cp311-macosx_arm64"), out.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    let cause = "no CUDA for macos-arm64: crosswheel has CUDA only for manylinux aarch64 and x86_64 targets, not for macos-arm64";
    assert_eq!(stderr.matches(cause).count(), 1, "{stderr}");
    assert!(
        stdout.contains(&format!("error: build failed: {cause}")),
        "{stdout}"
    );
    assert!(!stderr.contains("building cudaproj"), "{stderr}");
    assert!(common::wheel_names_in(out.path()).is_empty());
}

/// A CUDA release crosswheel cannot assemble is refused with the options, before any
/// build, saying why and what to do.
#[test]
fn a_cuda_release_without_an_nvcc_on_the_index_is_refused_before_any_build() {
    let project = tempfile::tempdir().unwrap();
    common::write_project(
        project.path(),
        &[(
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\
             [project]\nname = \"k\"\nversion = \"1\"\n\
             [tool.crosswheel]\ncuda = \"12.9\"\n",
        )],
    );
    let out = tempfile::tempdir().unwrap();
    let output = build(project.path(), Some("cp311-manylinux_x86_64"), out.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        !stderr.contains("cp311-manylinux_x86_64: build"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cuda = \"12.9\": crosswheel assembles CUDA 13.5 from the package index (CUDA 12's nvidia-cuda-nvcc-cu12 wheels hold no nvcc"),
        "{stderr}"
    );
    assert_eq!(
        stderr.lines().filter(|line| line.contains("12.9")).count(),
        1,
        "{stderr}"
    );
}
