//! The smoke test a CPython crosswheel builds for a target passes under qemu-user before it
//! is cached: the modules wheels' suites need, a libffi call and callback, and the target's
//! EXT_SUFFIX, byte order and pointer size. Debian's own aarch64 CPython is the reference
//! interpreter: what it fails, a built one would fail too.

use crosswheel::python_tag::PythonTag;
use crosswheel::stages::testing::SmokeTest;
use crosswheel::support::host::Cache;
use crosswheel::support::sysroot::{LinuxArch, Sysroot};
use crosswheel::support::target_libraries::target_cpythons;
use crosswheel::target::Target;

fn debian_aarch64_cp311(cache: &Cache) -> Sysroot {
    Sysroot::provision(
        cache.root(),
        LinuxArch::Aarch64,
        PythonTag::parse("cp311").unwrap(),
        &crosswheel::support::host::Network::default(),
    )
    .unwrap_or_else(|err| panic!("{err}"))
}

#[test]
#[ignore = "slow: qemu, Debian CPython"]
fn a_full_cpython_passes_with_every_module_the_catalogue_asks_for() {
    let cache = Cache::from_env().expect("a cache directory");
    let debian = debian_aarch64_cp311(&cache);
    let target = Target::parse("linux-aarch64").unwrap();
    let smoke = SmokeTest {
        cache: cache.root(),
        target: &target,
        python: PythonTag::parse("cp311").unwrap(),
        modules: target_cpythons().smoke_imports(),
        network: &crosswheel::support::host::Network::default(),
    };
    let said = smoke
        .run(debian.root())
        .unwrap_or_else(|err| panic!("{err}"));
    assert!(said.contains("calls C through ctypes"), "{said}");
}

#[test]
#[ignore = "slow: qemu, Debian CPython"]
fn a_missing_module_and_a_foreign_ext_suffix_fail_it_by_name() {
    let cache = Cache::from_env().expect("a cache directory");
    let debian = debian_aarch64_cp311(&cache);
    // Debian's glibc interpreter presented as the musl target's: the EXT_SUFFIX its
    // extensions load by differs (`-linux-gnu`), as a 3.11 configured with the wrong
    // `--build` would.
    let target = Target::parse("musllinux-aarch64").unwrap();
    let modules = ["zlib".to_string(), "_crosswheel_absent".to_string()];
    let smoke = SmokeTest {
        cache: cache.root(),
        target: &target,
        python: PythonTag::parse("cp311").unwrap(),
        modules: &modules,
        network: &crosswheel::support::host::Network::default(),
    };
    let problem = smoke.run(debian.root()).unwrap_err();
    assert!(
        problem.starts_with("its smoke test under qemu failed"),
        "{problem}"
    );
    assert!(
        problem.contains("cannot import _crosswheel_absent"),
        "{problem}"
    );
    assert!(
        problem.contains(".cpython-311-aarch64-linux-gnu.so, the target's wheels use .cpython-311-aarch64-linux-musl.so"),
        "{problem}"
    );
    assert!(!problem.contains('\n'), "{problem}");
}
