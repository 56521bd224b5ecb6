//! What the project's own pyproject.toml tables contribute to the options, read once when
//! the plan is resolved: PEP 735 `[dependency-groups]` for `test-groups`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::package_name::normalize;

/// `[dependency-groups]`, by normalised group name.
#[derive(Debug, Default)]
pub(crate) struct DependencyGroups {
    path: PathBuf,
    groups: BTreeMap<String, Vec<GroupItem>>,
    /// A table that could not be read, reported when a group is asked for.
    problem: Option<String>,
}

#[derive(Debug, Clone)]
enum GroupItem {
    Requirement(String),
    Include(String),
}

impl DependencyGroups {
    pub(crate) fn read(path: &Path, text: Option<&str>) -> DependencyGroups {
        let mut groups = DependencyGroups {
            path: path.to_path_buf(),
            ..DependencyGroups::default()
        };
        let Some(text) = text else {
            return groups;
        };
        let document: toml::Table = match toml::from_str(text) {
            Ok(document) => document,
            // The file's syntax errors were reported when its options were read.
            Err(_) => return groups,
        };
        let Some(table) = document.get("dependency-groups") else {
            return groups;
        };
        let Some(table) = table.as_table() else {
            groups.problem = Some("[dependency-groups] is not a table".to_string());
            return groups;
        };
        for (name, items) in table {
            let Some(items) = items.as_array() else {
                groups.problem = Some(format!("dependency group `{name}` is not an array"));
                continue;
            };
            let mut parsed = Vec::new();
            for item in items {
                match item {
                    toml::Value::String(requirement) => {
                        parsed.push(GroupItem::Requirement(requirement.clone()));
                    }
                    toml::Value::Table(include) => match include.get("include-group") {
                        Some(toml::Value::String(other)) => {
                            parsed.push(GroupItem::Include(other.clone()));
                        }
                        _ => {
                            groups.problem = Some(format!(
                                "dependency group `{name}` holds a table that is not {{include-group = \"...\"}}"
                            ));
                        }
                    },
                    _ => {
                        groups.problem = Some(format!(
                            "dependency group `{name}` holds something that is neither a requirement nor an include-group"
                        ));
                    }
                }
            }
            groups.groups.insert(normalize(name), parsed);
        }
        groups
    }

    /// The requirements of the named groups, included groups expanded, in order.
    pub(crate) fn requirements(&self, names: &[String]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for name in names {
            self.expand(name, &mut Vec::new(), &mut out)?;
        }
        Ok(out)
    }

    fn expand(
        &self,
        name: &str,
        stack: &mut Vec<String>,
        out: &mut Vec<String>,
    ) -> Result<(), String> {
        if let Some(problem) = &self.problem {
            return Err(format!("{}: {problem}", self.path.display()));
        }
        let key = normalize(name);
        if stack.contains(&key) {
            return Err(format!(
                "dependency group `{name}` of {} includes itself ({})",
                self.path.display(),
                stack.join(" → ")
            ));
        }
        let items = self.groups.get(&key).ok_or_else(|| {
            let known: Vec<&str> = self.groups.keys().map(String::as_str).collect();
            format!(
                "`{name}` is not a dependency group of {} ([dependency-groups] has {})",
                self.path.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?;
        stack.push(key);
        for item in items {
            match item {
                GroupItem::Requirement(requirement) => {
                    if !out.contains(requirement) {
                        out.push(requirement.clone());
                    }
                }
                GroupItem::Include(other) => self.expand(other, stack, out)?,
            }
        }
        stack.pop();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(text: &str) -> DependencyGroups {
        DependencyGroups::read(Path::new("pyproject.toml"), Some(text))
    }

    #[test]
    fn groups_expand_includes_and_normalise_names() {
        let groups = groups(
            "[dependency-groups]\nTest_Group = [\"pytest>=8\", {include-group = \"cov\"}]\ncov = [\"coverage\", \"pytest>=8\"]\n",
        );
        assert_eq!(
            groups.requirements(&["test-group".to_string()]).unwrap(),
            ["pytest>=8", "coverage"]
        );
        let err = groups.requirements(&["docs".to_string()]).unwrap_err();
        assert!(err.contains("`docs`") && err.contains("cov"), "{err}");
    }

    #[test]
    fn include_cycles_are_errors() {
        let groups = groups(
            "[dependency-groups]\na = [{include-group = \"b\"}]\nb = [{include-group = \"a\"}]\n",
        );
        assert!(
            groups
                .requirements(&["a".to_string()])
                .unwrap_err()
                .contains("includes itself")
        );
    }
}
