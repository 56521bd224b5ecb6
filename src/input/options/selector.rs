//! `build`, `skip`, `test-skip` and override `select` patterns: shell globs over build
//! identifiers (`*`, `?`, `[...]`) with `{a,b}` alternatives, as cibuildwheel matches them.

use glob::Pattern;

/// A list of glob patterns; an identifier is selected when any pattern matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    /// As written, for messages.
    patterns: Vec<String>,
    /// After `{a,b}` expansion.
    compiled: Vec<Pattern>,
}

impl Selector {
    pub fn new(patterns: &[String]) -> Result<Selector, String> {
        let mut compiled = Vec::new();
        for pattern in patterns {
            for expanded in expand_braces(pattern)? {
                compiled.push(
                    Pattern::new(&expanded)
                        .map_err(|err| format!("invalid pattern `{pattern}`: {}", err.msg))?,
                );
            }
        }
        Ok(Selector {
            patterns: patterns.to_vec(),
            compiled,
        })
    }

    /// Selects nothing.
    pub fn empty() -> Selector {
        Selector {
            patterns: Vec::new(),
            compiled: Vec::new(),
        }
    }

    pub fn matches(&self, identifier: &str) -> bool {
        self.compiled
            .iter()
            .any(|pattern| pattern.matches(identifier))
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    pub fn is_empty(&self) -> bool {
        self.compiled.is_empty()
    }
}

/// `cp3{10,11}-*` → `cp310-*`, `cp311-*`; nested groups expand too.
fn expand_braces(pattern: &str) -> Result<Vec<String>, String> {
    let Some(open) = pattern.find('{') else {
        if pattern.contains('}') {
            return Err(format!("unbalanced `}}` in pattern `{pattern}`"));
        }
        return Ok(vec![pattern.to_string()]);
    };
    let (prefix, from_open) = pattern.split_at(open);
    let mut depth = 0usize;
    let mut alternatives = Vec::new();
    let mut start = 1;
    let mut close = None;
    for (index, c) in from_open.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    alternatives.push(from_open.get(start..index).unwrap_or_default());
                    close = Some(index);
                    break;
                }
            }
            ',' if depth == 1 => {
                alternatives.push(from_open.get(start..index).unwrap_or_default());
                start = index + 1;
            }
            _ => {}
        }
    }
    let close = close.ok_or_else(|| format!("unbalanced `{{` in pattern `{pattern}`"))?;
    let suffix = from_open.get(close + 1..).unwrap_or_default();
    let range = match alternatives.as_slice() {
        [single] => sequence(single),
        _ => None,
    };
    let alternatives: Vec<String> = match range {
        Some(items) => items,
        None => alternatives.into_iter().map(String::from).collect(),
    };
    let mut expanded = Vec::new();
    for alternative in alternatives {
        expanded.extend(expand_braces(&format!("{prefix}{alternative}{suffix}"))?);
    }
    Ok(expanded)
}

/// A brace sequence as bash (and cibuildwheel's bracex) expands it: `9..15` → 9, 10, ...,
/// 15 (either direction, optionally `..step`), `a..e` → a, b, ..., e.
fn sequence(text: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = text.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [from, to] => (*from, *to, None),
        [from, to, step] => (*from, *to, Some(*step)),
        _ => return None,
    };
    let step = match step {
        Some(step) => step.parse::<i64>().ok()?.unsigned_abs().max(1),
        None => 1,
    };
    if let (Ok(from), Ok(to)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let count = from.abs_diff(to) / step + 1;
        if count > 1000 {
            return None;
        }
        let direction: i64 = if to >= from { 1 } else { -1 };
        let step = i64::try_from(step).ok()?;
        return Some(
            (0..i64::try_from(count).ok()?)
                .map(|index| (from + direction * step * index).to_string())
                .collect(),
        );
    }
    let (mut from_chars, mut to_chars) = (from.chars(), to.chars());
    match (
        from_chars.next(),
        from_chars.next(),
        to_chars.next(),
        to_chars.next(),
    ) {
        (Some(from), None, Some(to), None)
            if from.is_ascii_alphabetic() && to.is_ascii_alphabetic() =>
        {
            let (low, high) = (from.min(to) as u8, from.max(to) as u8);
            let mut items: Vec<String> = (low..=high)
                .step_by(usize::try_from(step).ok()?)
                .map(|byte| char::from(byte).to_string())
                .collect();
            if from > to {
                items.reverse();
            }
            Some(items)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(patterns: &str) -> Selector {
        let patterns: Vec<String> = patterns.split_whitespace().map(String::from).collect();
        Selector::new(&patterns).unwrap()
    }

    #[test]
    fn star_selects_everything() {
        assert!(selector("*").matches("cp311-macosx_arm64"));
    }

    #[test]
    fn any_pattern_of_the_list_selects() {
        let s = selector("cp310-* *-manylinux_ppc64le");
        assert!(s.matches("cp310-macosx_arm64"));
        assert!(s.matches("cp312-manylinux_ppc64le"));
        assert!(!s.matches("cp311-manylinux_aarch64"));
    }

    #[test]
    fn braces_expand_to_alternatives() {
        let s = selector("cp3{10,11}-manylinux_{aarch64,ppc64le}");
        assert!(s.matches("cp310-manylinux_aarch64"));
        assert!(s.matches("cp311-manylinux_ppc64le"));
        assert!(!s.matches("cp312-manylinux_aarch64"));
        assert!(!s.matches("cp311-macosx_arm64"));
    }

    #[test]
    fn brace_sequences_expand_like_bash() {
        let s = selector("cp3{9..15}{t,}-*");
        assert!(s.matches("cp39-manylinux_aarch64"));
        assert!(s.matches("cp312-manylinux_aarch64"));
        assert!(s.matches("cp314t-macosx_arm64"));
        assert!(!s.matches("cp316-macosx_arm64"));
        assert_eq!(
            expand_braces("x{3..1}{a..c..2}").unwrap(),
            ["x3a", "x3c", "x2a", "x2c", "x1a", "x1c"]
        );
        assert_eq!(expand_braces("x{1..}").unwrap(), ["x1.."]);
    }

    #[test]
    fn character_classes_and_question_marks_work() {
        let s = selector("cp31[01]-?acosx_*");
        assert!(s.matches("cp310-macosx_arm64"));
        assert!(!s.matches("cp312-macosx_arm64"));
    }

    #[test]
    fn empty_selector_selects_nothing() {
        assert!(!selector("").matches("cp311-macosx_arm64"));
    }

    #[test]
    fn rejects_unbalanced_braces_and_bad_classes() {
        assert!(Selector::new(&["cp3{10-*".to_string()]).is_err());
        assert!(Selector::new(&["cp310}-*".to_string()]).is_err());
        assert!(Selector::new(&["cp31[-*".to_string()]).is_err());
    }
}
