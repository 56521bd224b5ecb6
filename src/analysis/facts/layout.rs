//! Paths inside a wheel as the installed files will see them: `$ORIGIN`
//! expansion and lexical normalisation on '/'-separated relative paths,
//! without touching the host file system; and the folders that receive
//! vendored libraries.

use crate::formats::wheel::WheelArchive;

/// Where a wheel entry lands relative to site-packages: files under
/// `<name>.data/purelib/` and `<name>.data/platlib/` are installed at the root.
pub fn install_path(entry: &str) -> &str {
    let Some((first, rest)) = entry.split_once('/') else {
        return entry;
    };
    if !first.ends_with(".data") {
        return entry;
    }
    for scheme in ["purelib/", "platlib/"] {
        if let Some(inner) = rest.strip_prefix(scheme) {
            return inner;
        }
    }
    entry
}

/// The folder part of a relative path (`""` for a top-level file).
pub fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Joins and normalises `base/relative`; `None` when the result leaves the wheel.
pub fn join(base: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for component in relative.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Resolves an rpath entry of the binary at `binary_path` to a folder inside
/// the wheel; `None` for absolute entries and for `$ORIGIN` paths that escape.
pub fn rpath_in_wheel(entry: &str, binary_path: &str) -> Option<String> {
    let relative = entry
        .strip_prefix("$ORIGIN")
        .or_else(|| entry.strip_prefix("${ORIGIN}"))?;
    join(parent(binary_path), relative)
}

/// `$ORIGIN`-relative reference from the folder of `from_file` to `to_dir`.
pub fn origin_relative(from_file: &str, to_dir: &str) -> String {
    let from: Vec<&str> = parent(from_file)
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    let to: Vec<&str> = to_dir.split('/').filter(|p| !p.is_empty()).collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts = vec!["$ORIGIN"];
    parts.extend(std::iter::repeat_n("..", from.len() - common));
    parts.extend(&to[common..]);
    parts.join("/")
}

/// The folder (install path) that receives vendored ELF libraries, as
/// auditwheel names it: `<distribution>.libs`.
pub fn linux_libs_dir(wheel: &WheelArchive, lib_sdir: &str) -> String {
    format!("{}{lib_sdir}", wheel.name().distribution)
}

/// auditwheel's default `--lib-sdir`: the suffix of the distribution's folder.
pub const LINUX_LIB_SDIR: &str = ".libs";
/// delocate's default `--lib-sdir`: the folder inside the package.
pub const MACOS_LIB_SDIR: &str = ".dylibs";

/// The folder that receives vendored dylibs, chosen as delocate does:
/// `.dylibs` inside the top-level package named like the distribution, else
/// inside the alphabetically first top-level package, else
/// `<distribution>.dylibs` at the root.
pub fn macos_libs_dir(wheel: &WheelArchive, lib_sdir: &str) -> String {
    let distribution = &wheel.name().distribution;
    let mut packages: Vec<&str> = wheel
        .entries()
        .iter()
        .filter_map(|entry| {
            let path = install_path(&entry.name);
            path.strip_suffix("/__init__.py")
                .filter(|package| !package.contains('/'))
        })
        .collect();
    packages.sort_unstable();
    let chosen = packages
        .iter()
        .find(|package| package.eq_ignore_ascii_case(distribution))
        .or(packages.first());
    match chosen {
        Some(package) => format!("{package}/{lib_sdir}"),
        None => format!("{distribution}{lib_sdir}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_scheme_files_install_at_the_root() {
        assert_eq!(install_path("pkg-1.0.data/platlib/pkg/_x.so"), "pkg/_x.so");
        assert_eq!(
            install_path("pkg-1.0.data/scripts/tool"),
            "pkg-1.0.data/scripts/tool"
        );
        assert_eq!(install_path("pkg/_x.so"), "pkg/_x.so");
    }

    #[test]
    fn origin_entries_resolve_inside_the_wheel() {
        assert_eq!(
            rpath_in_wheel("$ORIGIN/../../numpy.libs", "numpy/core/_m.so").as_deref(),
            Some("numpy.libs")
        );
        assert_eq!(
            rpath_in_wheel("${ORIGIN}", "pkg/_m.so").as_deref(),
            Some("pkg")
        );
    }

    #[test]
    fn entries_leaving_the_wheel_do_not_resolve() {
        assert_eq!(rpath_in_wheel("$ORIGIN/../../lib", "pkg/_m.so"), None);
        assert_eq!(rpath_in_wheel("/usr/local/lib", "pkg/_m.so"), None);
    }

    #[test]
    fn origin_relative_walks_up_then_down() {
        assert_eq!(
            origin_relative("numpy/core/_m.so", "numpy.libs"),
            "$ORIGIN/../../numpy.libs"
        );
        assert_eq!(origin_relative("_top.so", "pkg.libs"), "$ORIGIN/pkg.libs");
        assert_eq!(origin_relative("pkg.libs/liba.so", "pkg.libs"), "$ORIGIN");
    }
}
