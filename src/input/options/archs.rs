//! What an `archs` value builds on one platform: the keywords (`auto`, `auto64`, `auto32`,
//! `native`, `all`) spelt out as architectures, then each name matched to crosswheel's
//! targets. The keyword lists are data (`[archs-keywords]` of config/defaults.toml;
//! docs/configuration.md says why they are cibuildwheel's lists on GitHub's default runner).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::identifiers::{Platform, TargetData, targets};
use super::sources::DEFAULTS_TOML;

/// `auto`, `auto64`, `auto32`, `native` → the architectures each means, per platform.
type KeywordLists = BTreeMap<String, BTreeMap<String, Vec<String>>>;

#[derive(Debug, Deserialize)]
struct DefaultsFile {
    #[serde(rename = "archs-keywords")]
    archs_keywords: KeywordLists,
}

fn keyword_lists() -> &'static KeywordLists {
    static LISTS: OnceLock<KeywordLists> = OnceLock::new();
    LISTS.get_or_init(|| match toml::from_str::<DefaultsFile>(DEFAULTS_TOML) {
        Ok(file) => file.archs_keywords,
        // The file is compiled in; the unit test `bundled_keywords_cover_every_platform`
        // guards it.
        Err(err) => panic!("config/defaults.toml [archs-keywords] is invalid: {err}"),
    })
}

/// The architecture names a keyword means on `platform` (`None`: not a keyword, or `all`).
fn keyword_arches(keyword: &str, platform: Platform) -> Option<&'static [String]> {
    keyword_lists()
        .get(platform.name())?
        .get(keyword)
        .map(Vec::as_slice)
}

/// What one `archs` value picks on `platform`: the targets, and the architecture names
/// crosswheel has no target for (`i686` of `auto` where no i686 target exists).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Picked {
    pub targets: Vec<&'static TargetData>,
    pub missing: Vec<String>,
}

/// Resolves `name` (a keyword, an architecture, a target id, alias or identifier platform)
/// against `platform`'s targets.
pub(super) fn pick(name: &str, platform: Platform) -> Picked {
    let lower = name.trim().to_ascii_lowercase();
    let of_platform = || targets().iter().filter(|t| t.platform == platform);
    if lower == "all" {
        return Picked {
            targets: of_platform().collect(),
            missing: Vec::new(),
        };
    }
    let names: Vec<String> = match keyword_arches(&lower, platform) {
        Some(arches) => arches.to_vec(),
        None => vec![lower],
    };
    let mut picked = Picked::default();
    for arch in names {
        let matching: Vec<&TargetData> = of_platform().filter(|t| t.is_named(&arch)).collect();
        if matching.is_empty() {
            picked.missing.push(arch);
        } else {
            picked.targets.extend(matching);
        }
    }
    picked
}

/// Whether `name` is one of the keywords.
pub(super) fn is_keyword(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    lower == "all"
        || keyword_lists()
            .values()
            .any(|lists| lists.contains_key(&lower))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(picked: &Picked) -> Vec<&str> {
        picked.targets.iter().map(|t| t.id.as_str()).collect()
    }

    #[test]
    fn bundled_keywords_cover_every_platform() {
        for platform in Platform::ALL {
            for keyword in super::super::value::ARCHS_KEYWORDS {
                if keyword != "all" {
                    assert!(
                        keyword_arches(keyword, platform).is_some(),
                        "{keyword} on {platform}"
                    );
                }
            }
        }
    }

    #[test]
    fn keywords_mean_what_cibuildwheel_builds_on_githubs_default_runners() {
        // An architecture is both its manylinux and its musllinux target, as cibuildwheel
        // builds both identifiers unless `build`/`skip` select.
        let linux_native = pick("native", Platform::Linux);
        assert_eq!(ids(&linux_native), ["linux-x86_64", "musllinux-x86_64"]);
        assert_eq!(
            ids(&pick("AUTO64", Platform::Linux)),
            ["linux-x86_64", "musllinux-x86_64"]
        );
        assert_eq!(
            ids(&pick("manylinux_x86_64", Platform::Linux)),
            ["linux-x86_64"]
        );
        assert_eq!(ids(&pick("native", Platform::Macos)), ["macos-arm64"]);
        assert_eq!(ids(&pick("auto", Platform::Macos)), ["macos-arm64"]);
        assert!(pick("auto32", Platform::Macos).targets.is_empty());
        let auto = pick("auto", Platform::Linux);
        assert_eq!(
            ids(&auto),
            [
                "linux-x86_64",
                "musllinux-x86_64",
                "linux-i686",
                "musllinux-i686"
            ]
        );
    }

    #[test]
    fn all_is_every_target_of_the_platform() {
        let all = pick("all", Platform::Linux);
        let expected: Vec<&str> = targets()
            .iter()
            .filter(|t| t.platform == Platform::Linux)
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(ids(&all), expected);
        assert!(all.missing.is_empty());
    }

    #[test]
    fn names_pick_their_platforms_targets_and_report_the_others() {
        assert_eq!(
            ids(&pick("ppc64le", Platform::Linux)),
            ["linux-ppc64le", "musllinux-ppc64le"]
        );
        assert!(pick("ppc64le", Platform::Macos).targets.is_empty());
        assert_eq!(
            pick("universal2", Platform::Linux).missing,
            ["universal2".to_string()]
        );
        assert!(is_keyword("Auto32") && is_keyword("all") && !is_keyword("x86_64"));
    }
}
