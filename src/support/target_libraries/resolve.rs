//! Which catalogue libraries a target's builds get, and at which version: what the
//! configuration names (`target-libraries` requirements, `before-all` install lines), every
//! library those link, and, for a library the catalogue has at several versions, the one
//! its requirement allows and the project's own pin asks for.
//!
//! A project that builds its libraries itself often pins their versions in its build
//! environment (lxml's `LIBXML2_VERSION = "2.14.6"`). The same project built against the
//! distribution's libraries (`STATIC_DEPS=false` with `yum install -y libxml2-devel`) in a
//! container gets whatever that distribution has; here the catalogue picks the first of its
//! versions no older than the pin, so the wheel does not ship a library years older than
//! the one the project tests with.

use std::collections::{BTreeMap, VecDeque};

use super::TargetLibraryError;
use super::catalogue::{LibraryEntry, catalogue};

/// The libraries to build for a target, each after those it links, and what the projects'
/// pins did to their versions.
#[derive(Debug, Default)]
pub struct Resolution {
    pub libraries: Vec<&'static LibraryEntry>,
    pub pins: Vec<PinOutcome>,
}

/// How a version pin in the build's environment was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinOutcome {
    /// One line for the log.
    pub message: String,
    /// Whether the chosen version is at least the pinned one.
    pub met: bool,
}

/// The catalogue libraries `requirements` name (`libffi`, `openssl>=3`, `zlib==1.2.13`),
/// each at the first catalogue version its requirement allows.
pub fn requested_libraries(
    requirements: &[String],
) -> Result<Vec<&'static LibraryEntry>, TargetLibraryError> {
    let mut entries: Vec<&'static LibraryEntry> = Vec::new();
    for text in requirements {
        let requirement = Requirement::parse(text)?;
        let entry = requirement.allowed()?[0];
        if !entries.iter().any(|known| known.name == entry.name) {
            entries.push(entry);
        }
    }
    Ok(entries)
}

/// The libraries for a target: those `requirements` name, then `asked` (by name: a
/// `before-all` line's, OpenMP's runtime), then everything they link; each at the first
/// version its requirement allows that is no older than a pin `environment` sets in one
/// of the library's `version_variables`; in build order.
pub fn resolve(
    requirements: &[String],
    asked: &[&'static LibraryEntry],
    environment: &BTreeMap<String, String>,
) -> Result<Resolution, TargetLibraryError> {
    let mut wanted: Vec<Requirement> = Vec::new();
    for text in requirements {
        let requirement = Requirement::parse(text)?;
        if !wanted.iter().any(|known| known.name == requirement.name) {
            wanted.push(requirement);
        }
    }
    for entry in asked {
        if !wanted.iter().any(|known| known.name == entry.name) {
            wanted.push(Requirement::any(&entry.name));
        }
    }
    let roots: Vec<&'static str> = wanted.iter().map(|requirement| requirement.name).collect();
    // Requirements first, so a library both named and linked gets the named version.
    let mut queue: VecDeque<Requirement> = wanted.into();
    let mut chosen: BTreeMap<&'static str, &'static LibraryEntry> = BTreeMap::new();
    let mut pins = Vec::new();
    while let Some(requirement) = queue.pop_front() {
        if chosen.contains_key(requirement.name) {
            continue;
        }
        let (entry, pin) = requirement.choose(environment)?;
        pins.extend(pin);
        chosen.insert(requirement.name, entry);
        for dependency in &entry.depends {
            queue.push_back(Requirement::any(dependency));
        }
    }
    let mut libraries = Vec::new();
    for name in roots {
        push_in_build_order(name, &chosen, &mut libraries);
    }
    Ok(Resolution { libraries, pins })
}

fn push_in_build_order(
    name: &str,
    chosen: &BTreeMap<&'static str, &'static LibraryEntry>,
    ordered: &mut Vec<&'static LibraryEntry>,
) {
    // Every name reached from a root was chosen above; the catalogue's own test holds
    // every dependency to an earlier entry, so this recursion ends.
    let Some(entry) = chosen.get(name) else {
        return;
    };
    for dependency in &entry.depends {
        push_in_build_order(dependency, chosen, ordered);
    }
    if !ordered.iter().any(|known| known.name == entry.name) {
        ordered.push(entry);
    }
}

/// The names of the libraries among `built` that `entry` links, directly or not.
pub fn linked_by<'a>(entry: &LibraryEntry, built: &[&'a LibraryEntry]) -> Vec<&'a str> {
    let mut found: Vec<&'a str> = Vec::new();
    let mut queue: VecDeque<&str> = entry.depends.iter().map(String::as_str).collect();
    while let Some(name) = queue.pop_front() {
        let Some(dependency) = built.iter().find(|known| known.name == name) else {
            continue;
        };
        if !found.contains(&dependency.name.as_str()) {
            found.push(&dependency.name);
            queue.extend(dependency.depends.iter().map(String::as_str));
        }
    }
    found
}

/// One library a configuration asks for, and the versions it allows.
struct Requirement {
    /// The catalogue's spelling of the name.
    name: &'static str,
    rule: Option<Rule>,
    /// As the configuration wrote it, for messages.
    text: String,
}

/// A version comparison: `>=3`, `==1.2.13`.
struct Rule {
    operator: &'static str,
    version: String,
}

impl Requirement {
    fn any(name: &str) -> Self {
        let entry = catalogue()
            .library(name)
            .expect("a name taken from the catalogue is in it");
        Requirement {
            name: &entry.name,
            rule: None,
            text: entry.name.clone(),
        }
    }

    fn parse(text: &str) -> Result<Self, TargetLibraryError> {
        let bad = |problem: String| TargetLibraryError::BadRequirement {
            requirement: text.to_string(),
            problem,
        };
        let at = text.find(['<', '>', '=', '!', '~']).unwrap_or(text.len());
        let name = text[..at].trim();
        let constraint = text[at..].trim();
        let entry = catalogue()
            .library(name)
            .ok_or_else(|| bad(format!("no library {name} in the catalogue")))?;
        let rule = if constraint.is_empty() {
            None
        } else {
            let (operator, version) = ["==", ">=", "<=", "!=", ">", "<"]
                .iter()
                .find_map(|op| constraint.strip_prefix(op).map(|rest| (*op, rest.trim())))
                .ok_or_else(|| {
                    bad(format!(
                        "`{constraint}` is not ==, >=, <=, !=, > or < a version"
                    ))
                })?;
            Some(Rule {
                operator,
                version: version.to_string(),
            })
        };
        Ok(Requirement {
            name: &entry.name,
            rule,
            text: text.to_string(),
        })
    }

    /// The catalogue's versions of the library this requirement allows, in catalogue order
    /// (the first is the one a requirement without a pin gets); never empty.
    fn allowed(&self) -> Result<Vec<&'static LibraryEntry>, TargetLibraryError> {
        let versions = catalogue().versions(self.name);
        let allowed: Vec<&'static LibraryEntry> = versions
            .iter()
            .copied()
            .filter(|entry| {
                self.rule
                    .as_ref()
                    .is_none_or(|rule| rule.allows(&entry.version))
            })
            .collect();
        if allowed.is_empty() {
            let rule = self.rule.as_ref().expect("only a rule rules out versions");
            let have: Vec<&str> = versions
                .iter()
                .map(|entry| entry.version.as_str())
                .collect();
            return Err(TargetLibraryError::BadRequirement {
                requirement: self.text.clone(),
                problem: format!(
                    "the catalogue's {} is {}, not {}{}",
                    self.name,
                    have.join(" or "),
                    rule.operator,
                    rule.version
                ),
            });
        }
        Ok(allowed)
    }

    /// The version to build, and how a pin in `environment` was answered, if one was set.
    fn choose(
        &self,
        environment: &BTreeMap<String, String>,
    ) -> Result<(&'static LibraryEntry, Option<PinOutcome>), TargetLibraryError> {
        let allowed = self.allowed()?;
        let first = allowed[0];
        let pin = catalogue()
            .version_variables(self.name)
            .iter()
            .find_map(|variable| {
                let value = environment.get(variable)?.trim();
                value
                    .starts_with(|c: char| c.is_ascii_digit())
                    .then_some((variable, value))
            });
        let Some((variable, pinned)) = pin else {
            return Ok((first, None));
        };
        let no_older = |entry: &LibraryEntry| compare_versions(&entry.version, pinned).is_ge();
        if no_older(first) {
            return Ok((first, None));
        }
        let name = self.name;
        // Where the requirement ruled versions out, the messages name it: the catalogue
        // may well have a version the pin wants that the requirement does not allow.
        let text = &self.text;
        if let Some(entry) = allowed.iter().find(|entry| no_older(entry)) {
            let first_of = match self.rule {
                None => format!("the catalogue's first {name}"),
                Some(_) => format!("the first {name} `{text}` allows"),
            };
            let message = format!(
                "{name} {}: the build's environment pins {variable}={pinned}, newer than {first_of}, {}",
                entry.version, first.version
            );
            return Ok((entry, Some(PinOutcome { message, met: true })));
        }
        let newest = allowed
            .iter()
            .copied()
            .max_by(|a, b| compare_versions(&a.version, &b.version))
            .unwrap_or(first);
        let message = match self.rule {
            None => format!(
                "{name} {}: the build's environment pins {variable}={pinned}, and the catalogue (config/target-libraries.toml) has no {name} that new; building its newest",
                newest.version
            ),
            Some(_) => format!(
                "{name} {}: the build's environment pins {variable}={pinned}, and `{text}` allows no {name} that new in the catalogue (config/target-libraries.toml); building the newest it allows",
                newest.version
            ),
        };
        Ok((
            newest,
            Some(PinOutcome {
                message,
                met: false,
            }),
        ))
    }
}

impl Rule {
    fn allows(&self, version: &str) -> bool {
        let ordering = compare_versions(version, &self.version);
        match self.operator {
            "==" => ordering.is_eq(),
            ">=" => ordering.is_ge(),
            "<=" => ordering.is_le(),
            "!=" => ordering.is_ne(),
            ">" => ordering.is_gt(),
            _ => ordering.is_lt(),
        }
    }
}

/// Compares dotted versions part by part by their leading digits, a missing part counting
/// as 0 (`3` == `3.0`, `2.9.14` < `2.14.6`).
pub(super) fn compare_versions(left: &str, right: &str) -> std::cmp::Ordering {
    let parts = |version: &str| -> Vec<u64> {
        version
            .split('.')
            .map(|part| {
                part.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
                    .parse()
                    .unwrap_or(0)
            })
            .collect()
    };
    let (left, right) = (parts(left), parts(right));
    let at = |parts: &[u64], index: usize| parts.get(index).copied().unwrap_or(0);
    (0..left.len().max(right.len()))
        .map(|index| at(&left, index).cmp(&at(&right, index)))
        .find(|ordering| ordering.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn names_and_versions(resolution: &Resolution) -> Vec<String> {
        resolution
            .libraries
            .iter()
            .map(|entry| format!("{} {}", entry.name, entry.version))
            .collect()
    }

    #[test]
    fn requirements_name_catalogue_libraries_with_optional_versions() {
        let names = |list: &[&str]| -> Result<Vec<String>, String> {
            requested_libraries(&strings(list))
                .map(|entries| entries.iter().map(|e| e.name.clone()).collect())
                .map_err(|error| error.to_string())
        };
        assert_eq!(
            names(&["libffi", "zlib>=1.2", "libffi==3.4.4"]).unwrap(),
            ["libffi", "zlib"]
        );
        let too_new = names(&["libffi>=4"]).unwrap_err();
        assert!(
            too_new.starts_with(
                "target-libraries: `libffi>=4`: the catalogue's libffi is 3.4.4, not >=4"
            ),
            "{too_new}"
        );
        let unknown = names(&["libfoo"]).unwrap_err();
        assert!(
            unknown.contains("no library libfoo in the catalogue"),
            "{unknown}"
        );
    }

    #[test]
    fn libraries_come_after_the_catalogue_libraries_they_link() {
        let names = |list: &[&str]| -> Vec<String> {
            resolve(&strings(list), &[], &BTreeMap::new())
                .unwrap()
                .libraries
                .iter()
                .map(|entry| entry.name.clone())
                .collect()
        };
        assert_eq!(names(&["libxslt"]), ["zlib", "libxml2", "libxslt"]);
        assert_eq!(
            names(&["freetype", "zlib", "mpfr"]),
            ["zlib", "libpng", "freetype", "gmp", "mpfr"]
        );
        let resolved = resolve(&strings(&["freetype", "libffi"]), &[], &BTreeMap::new()).unwrap();
        let freetype = catalogue().library("freetype").unwrap();
        assert_eq!(linked_by(freetype, &resolved.libraries), ["zlib", "libpng"]);
    }

    #[test]
    fn without_a_pin_a_library_is_the_catalogues_first_version() {
        let resolved = resolve(&strings(&["libxslt"]), &[], &BTreeMap::new()).unwrap();
        assert_eq!(
            names_and_versions(&resolved),
            ["zlib 1.3.1", "libxml2 2.9.14", "libxslt 1.1.35"]
        );
        assert!(resolved.pins.is_empty());
    }

    #[test]
    fn a_projects_pin_picks_the_first_version_no_older_and_its_dependents_link_it() {
        // lxml 6.1.3's own [tool.cibuildwheel] environment.
        let environment = BTreeMap::from([
            ("LIBXML2_VERSION".to_string(), "2.14.6".to_string()),
            ("LIBXSLT_VERSION".to_string(), "1.1.43".to_string()),
            ("STATIC_DEPS".to_string(), "false".to_string()),
        ]);
        let libxslt = catalogue().library("libxslt").unwrap();
        let resolved = resolve(&[], &[libxslt], &environment).unwrap();
        assert_eq!(
            names_and_versions(&resolved),
            ["zlib 1.3.1", "libxml2 2.15.4", "libxslt 1.1.45"]
        );
        assert_eq!(resolved.pins.len(), 2);
        assert!(resolved.pins.iter().all(|pin| pin.met));
        assert_eq!(
            resolved.pins[0].message,
            "libxslt 1.1.45: the build's environment pins LIBXSLT_VERSION=1.1.43, newer than the catalogue's first libxslt, 1.1.35"
        );
        // A pin the first version meets changes nothing.
        let old = BTreeMap::from([("LIBXML2_VERSION".to_string(), "2.9".to_string())]);
        let resolved = resolve(&strings(&["libxml2"]), &[], &old).unwrap();
        assert_eq!(
            names_and_versions(&resolved),
            ["zlib 1.3.1", "libxml2 2.9.14"]
        );
        assert!(resolved.pins.is_empty());
    }

    #[test]
    fn a_pin_the_requirement_rules_out_names_the_requirement_not_the_catalogue() {
        let environment = BTreeMap::from([("LIBXML2_VERSION".to_string(), "2.14.6".to_string())]);
        let resolved = resolve(&strings(&["libxml2<2.15"]), &[], &environment).unwrap();
        assert_eq!(
            names_and_versions(&resolved),
            ["zlib 1.3.1", "libxml2 2.9.14"]
        );
        assert_eq!(
            resolved.pins,
            [PinOutcome {
                message: "libxml2 2.9.14: the build's environment pins LIBXML2_VERSION=2.14.6, and `libxml2<2.15` allows no libxml2 that new in the catalogue (config/target-libraries.toml); building the newest it allows".to_string(),
                met: false,
            }]
        );
    }

    #[test]
    fn a_pin_newer_than_the_catalogue_builds_its_newest_and_says_so() {
        let environment = BTreeMap::from([("LIBXML2_VERSION".to_string(), "3.0.1".to_string())]);
        let resolved = resolve(&strings(&["libxml2"]), &[], &environment).unwrap();
        assert_eq!(
            names_and_versions(&resolved),
            ["zlib 1.3.1", "libxml2 2.15.4"]
        );
        assert_eq!(
            resolved.pins,
            [PinOutcome {
                message: "libxml2 2.15.4: the build's environment pins LIBXML2_VERSION=3.0.1, and the catalogue (config/target-libraries.toml) has no libxml2 that new; building its newest".to_string(),
                met: false,
            }]
        );
    }

    #[test]
    fn a_requirement_of_target_libraries_bounds_what_a_pin_may_pick() {
        let environment = BTreeMap::from([("LIBXML2_VERSION".to_string(), "2.14.6".to_string())]);
        let resolved = resolve(&strings(&["libxml2<2.10"]), &[], &environment).unwrap();
        assert_eq!(
            names_and_versions(&resolved),
            ["zlib 1.3.1", "libxml2 2.9.14"]
        );
        assert!(!resolved.pins[0].met);
        let resolved = resolve(&strings(&["libxml2>=2.15"]), &[], &BTreeMap::new()).unwrap();
        assert_eq!(
            names_and_versions(&resolved),
            ["zlib 1.3.1", "libxml2 2.15.4"]
        );
        let error = resolve(&strings(&["libxml2>=3"]), &[], &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(
                "target-libraries: `libxml2>=3`: the catalogue's libxml2 is 2.9.14 or 2.15.4, not >=3"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_pin_that_is_no_version_is_no_pin() {
        let environment = BTreeMap::from([("LIBXML2_VERSION".to_string(), "latest".to_string())]);
        let resolved = resolve(&strings(&["libxml2"]), &[], &environment).unwrap();
        assert_eq!(
            names_and_versions(&resolved),
            ["zlib 1.3.1", "libxml2 2.9.14"]
        );
        assert!(resolved.pins.is_empty());
    }

    #[test]
    fn versions_compare_by_their_numbers() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_versions("2.9.14", "2.14.6"), Less);
        assert_eq!(compare_versions("3", "3.0"), Equal);
        assert_eq!(compare_versions("1.1.45", "1.1.43"), Greater);
    }
}
