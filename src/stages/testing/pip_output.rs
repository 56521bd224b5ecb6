//! What pip's output says went wrong, read into facts: which requirement could not be met
//! and who asked for it (the tested wheel's own `Requires-Dist`, or a test requirement),
//! and the line that explains a failure in one line.

/// A requirement pip found no distribution for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsatisfied {
    /// As pip wrote it: `numpy>=1.25`.
    pub requirement: String,
    /// The distribution whose metadata asked for it (`contourpy 1.3.3`, or `contourpy` when
    /// pip gives no version); `None`: the user asked for it (a test requirement).
    pub required_by: Option<String>,
}

/// The requirement pip could not satisfy, from either of its two ways of saying so:
///
/// `ERROR: Could not find a version that satisfies the requirement numpy>=1.25 (from
/// contourpy) (from versions: 1.24.2)` / `No matching distribution found for numpy>=1.25`,
/// or a resolution conflict, `The conflict is caused by:` followed by `The user requested
/// numpy` and `contourpy 1.3.3 depends on numpy>=1.25`.
pub(crate) fn unsatisfied(pip_output: &[String]) -> Option<Unsatisfied> {
    let lines: Vec<String> = pip_output.iter().map(|l| without_ansi(l)).collect();
    if let Some(found) = lines.iter().rev().find_map(|line| not_found(line)) {
        return Some(found);
    }
    if let Some(requirement) = lines.iter().rev().find_map(|line| {
        line.split_once("No matching distribution found for ")
            .map(|(_, requirement)| requirement.trim().to_string())
    }) {
        return Some(Unsatisfied {
            requirement,
            required_by: None,
        });
    }
    conflict_lines(&lines).into_iter().find_map(|line| {
        let (by, requirement) = line.split_once(" depends on ")?;
        Some(Unsatisfied {
            requirement: requirement.trim().to_string(),
            required_by: Some(by.trim().to_string()),
        })
    })
}

/// `Could not find a version that satisfies the requirement R (from X) (from versions: ...)`.
fn not_found(line: &str) -> Option<Unsatisfied> {
    let (_, rest) = line.split_once("satisfies the requirement ")?;
    let (requirement, rest) = match rest.split_once(" (from ") {
        Some((requirement, rest)) => (requirement, Some(rest)),
        None => (rest, None),
    };
    // `(from versions: ...)` lists what exists; `(from contourpy)` names the asker.
    let required_by = rest
        .and_then(|rest| rest.split_once(')'))
        .map(|(by, _)| by.trim())
        .filter(|by| !by.starts_with("versions:"))
        .map(|by| by.replace("==", " "));
    Some(Unsatisfied {
        requirement: requirement.trim().to_string(),
        required_by,
    })
}

/// The indented lines after `The conflict is caused by:`, up to the first blank one.
fn conflict_lines(lines: &[String]) -> Vec<String> {
    let Some(start) = lines
        .iter()
        .rposition(|line| line.trim() == "The conflict is caused by:")
    else {
        return Vec::new();
    };
    lines[start + 1..]
        .iter()
        .map(|line| line.trim())
        .take_while(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// pip's closing lines that only point elsewhere (`hint: See above for details.`).
const POINTERS: &[&str] = &[
    "ERROR: ResolutionImpossible",
    "error: subprocess-exited-with-error",
    "hint: See above",
    "note: This error originates from a subprocess",
    "note: This is an issue with the package mentioned above",
];

/// The line that best explains a failed pip run: the conflict pip found (`contourpy 1.3.3
/// depends on numpy>=1.25; The user requested numpy`), else its last `ERROR:` or `error:`
/// line that says something itself, else the last line.
pub(crate) fn reason(output: &[String]) -> Option<String> {
    let plain: Vec<String> = output.iter().map(|line| without_ansi(line)).collect();
    let conflict = conflict_lines(&plain);
    if !conflict.is_empty() {
        return Some(conflict.join("; "));
    }
    let says_something = |line: &&String| !POINTERS.iter().any(|p| line.trim().starts_with(p));
    plain
        .iter()
        .rev()
        .filter(says_something)
        .find(|line| {
            line.starts_with("ERROR:")
                || line.trim_start().starts_with("error:")
                || line.contains(": error:")
        })
        .or_else(|| {
            plain
                .iter()
                .rev()
                .filter(says_something)
                .find(|line| !line.trim().is_empty())
        })
        .cloned()
}

/// `line` without ANSI escape sequences (`ESC [ ... letter`): forced colours
/// (FORCE_COLOR in a project's environment) wrap pip's lines in them.
pub(crate) fn without_ansi(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    /// pip 23.2's output for `contourpy-1.3.3-...whl numpy` with only numpy 1.24.2 found.
    const CONFLICT: &str = "Processing ./contourpy-1.3.3-cp311-cp311-manylinux_2_17_ppc64le.whl
ERROR: Cannot install contourpy==1.3.3 and numpy because these package versions have conflicting dependencies.

The conflict is caused by:
    The user requested numpy
    contourpy 1.3.3 depends on numpy>=1.25

To fix this you could try to:
1. loosen the range of package versions you've specified

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts";

    /// The same without numpy among the test requirements.
    const NOT_FOUND: &str = "ERROR: Could not find a version that satisfies the requirement numpy>=1.25 (from contourpy) (from versions: 1.24.2)
ERROR: No matching distribution found for numpy>=1.25";

    #[test]
    fn a_conflict_names_the_wheel_that_asked_and_what_it_asked_for() {
        let found = unsatisfied(&lines(CONFLICT)).unwrap();
        assert_eq!(found.requirement, "numpy>=1.25");
        assert_eq!(found.required_by.as_deref(), Some("contourpy 1.3.3"));
        assert_eq!(
            reason(&lines(CONFLICT)).unwrap(),
            "The user requested numpy; contourpy 1.3.3 depends on numpy>=1.25"
        );
    }

    #[test]
    fn a_missing_dependency_names_the_distribution_that_needs_it() {
        let found = unsatisfied(&lines(NOT_FOUND)).unwrap();
        assert_eq!(found.requirement, "numpy>=1.25");
        assert_eq!(found.required_by.as_deref(), Some("contourpy"));
        let user = lines(
            "ERROR: Could not find a version that satisfies the requirement numpy>=2 (from versions: 1.24.2)\nERROR: No matching distribution found for numpy>=2",
        );
        let found = unsatisfied(&user).unwrap();
        assert_eq!(
            (found.requirement.as_str(), found.required_by),
            ("numpy>=2", None)
        );
        assert_eq!(unsatisfied(&lines("Looking in links: /x")), None);
    }

    #[test]
    fn a_reason_is_never_a_line_that_only_points_elsewhere() {
        let output = lines(
            "  x.c:1:1: error: unknown type name 'foo'\n  error: subprocess-exited-with-error\n  note: This error originates from a subprocess, and is likely not a problem with pip.\nhint: See above for details.",
        );
        assert_eq!(
            reason(&output).unwrap(),
            "  x.c:1:1: error: unknown type name 'foo'"
        );
        assert_eq!(
            reason(&lines("one\nERROR: two\nthree")).unwrap(),
            "ERROR: two"
        );
    }

    #[test]
    fn colour_codes_are_not_part_of_a_reason() {
        assert_eq!(
            without_ansi("\u{1b}[31mERROR: Could not open requirements file\u{1b}[0m"),
            "ERROR: Could not open requirements file"
        );
        assert_eq!(without_ansi("\u{1b}[0m"), "");
    }
}
