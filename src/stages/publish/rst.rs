//! A pragmatic reStructuredText check: the mistakes that most often make the
//! index refuse a long description (docutils, halting on warnings, as
//! readme_renderer runs it), without a full parser. Each check errs on the
//! side of accepting: a problem reported here is one docutils reports too.
//!
//! Covered: section adornments (underline/overline too short, overline and
//! underline mismatch, inconsistent title levels), unknown, disabled or
//! unimplemented directives and roles, literal blocks announced by `::` but
//! missing, explicit markup followed by text without a blank line, named
//! references without a target.
//!
//! Not covered: unclosed inline markup (`*text`), undefined substitutions,
//! tables' geometry.

use std::collections::HashSet;
use std::sync::OnceLock;

/// One problem found, with its 1-based line in the description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RstProblem {
    pub line: usize,
    pub message: String,
}

#[derive(serde::Deserialize)]
struct Vocabulary {
    body_directives: HashSet<String>,
    literal_directives: HashSet<String>,
    disabled_directives: HashSet<String>,
    roles: HashSet<String>,
    unimplemented_roles: HashSet<String>,
    disabled_roles: HashSet<String>,
}

fn vocabulary() -> &'static Vocabulary {
    static VOCABULARY: OnceLock<Vocabulary> = OnceLock::new();
    VOCABULARY.get_or_init(|| {
        // Compiled in and covered by a unit test, so this cannot fail at run time.
        toml::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/rst-vocabulary.toml"
        )))
        .unwrap_or_else(|error| panic!("config/rst-vocabulary.toml is invalid: {error}"))
    })
}

/// Every problem found in `text`, in line order.
pub fn check_rst(text: &str) -> Vec<RstProblem> {
    let lines: Vec<String> = text
        .lines()
        .map(|line| line.replace('\t', "        ").trim_end().to_owned())
        .collect();
    let mut checker = Checker {
        lines: &lines,
        ..Checker::default()
    };
    checker.run();
    checker.finish()
}

#[derive(Default)]
struct Checker<'a> {
    lines: &'a [String],
    problems: Vec<RstProblem>,
    /// Adornment styles (character, has overline) in order of first use:
    /// the index is the section level minus one.
    title_styles: Vec<(char, bool)>,
    section_level: usize,
    /// Normalized names of every target: explicit, embedded and implicit (titles).
    targets: HashSet<String>,
    references: Vec<(usize, String)>,
    custom_roles: HashSet<String>,
}

impl Checker<'_> {
    fn run(&mut self) {
        let mut index = 0;
        let mut paragraph_start = true;
        let mut in_inline_literal = false;
        while let Some(line) = self.lines.get(index) {
            if line.is_empty() {
                paragraph_start = true;
                in_inline_literal = false;
                index += 1;
                continue;
            }
            let indent = indent_of(line);
            let content = &line[indent..];
            if is_explicit_markup(content) {
                index = self.explicit_markup(index, indent);
                paragraph_start = true;
                continue;
            }
            if indent == 0
                && paragraph_start
                && let Some(next) = self.section_title(index)
            {
                index = next;
                continue;
            }
            in_inline_literal = self.inline_markup(index, content, in_inline_literal);
            paragraph_start = false;
            index = if content.ends_with("::") && self.is_blank(index + 1) {
                self.literal_block(index, indent)
            } else {
                index + 1
            };
        }
    }

    fn finish(mut self) -> Vec<RstProblem> {
        for (line, name) in std::mem::take(&mut self.references) {
            if !self.targets.contains(&name) {
                self.report(line, format!("Unknown target name: \"{name}\"."));
            }
        }
        self.problems.sort_by_key(|problem| problem.line);
        self.problems
    }

    fn report(&mut self, index: usize, message: String) {
        self.problems.push(RstProblem {
            line: index + 1,
            message,
        });
    }

    fn is_blank(&self, index: usize) -> bool {
        self.lines.get(index).is_none_or(|line| line.is_empty())
    }

    /// The first line after the block of lines indented more than `indent`
    /// that starts at `index` (blank lines inside the block included).
    fn block_end(&self, mut index: usize, indent: usize) -> usize {
        let mut end = index;
        while let Some(line) = self.lines.get(index) {
            if !line.is_empty() {
                if indent_of(line) <= indent {
                    break;
                }
                end = index + 1;
            }
            index += 1;
        }
        end
    }

    /// A paragraph ending in `::` at `index` announces a literal block.
    fn literal_block(&mut self, index: usize, indent: usize) -> usize {
        let Some(first) = (index + 1..self.lines.len()).find(|&i| !self.is_blank(i)) else {
            self.report(index + 1, "Literal block expected; none found.".to_owned());
            return self.lines.len();
        };
        let line = &self.lines[first];
        let first_indent = indent_of(line);
        if first_indent > indent {
            return self.block_end(first, indent);
        }
        // A quoted literal block: unindented lines all starting with the
        // same punctuation character.
        if let Some(quote) = line[first_indent..]
            .chars()
            .next()
            .filter(is_adornment_char)
        {
            let mut end = first;
            while self.lines.get(end).is_some_and(|l| l.starts_with(quote)) {
                end += 1;
            }
            return end;
        }
        self.report(first, "Literal block expected; none found.".to_owned());
        first
    }

    /// Handles the explicit markup construct (`.. `) at `index`; returns the
    /// next line to look at.
    fn explicit_markup(&mut self, index: usize, indent: usize) -> usize {
        let end = self.block_end(index + 1, indent);
        if let Some(next) = self.lines.get(end)
            && !next.is_empty()
            && !is_explicit_markup(&next[indent_of(next)..])
        {
            self.report(
                end,
                "Explicit markup ends without a blank line; unexpected unindent.".to_owned(),
            );
        }
        let body = self.lines[index][indent..]
            .trim_start_matches('.')
            .trim_start();
        if let Some(target) = body.strip_prefix('_') {
            self.explicit_target(target);
            return end;
        }
        if let Some(label) = body.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
            self.define_target(label.0);
            return index + 1;
        }
        let directive = match body.strip_prefix('|').and_then(|rest| rest.split_once('|')) {
            Some((_, rest)) => parse_directive(rest.trim_start()),
            None => parse_directive(body),
        };
        let Some((name, arguments)) = directive else {
            return end; // A comment: nothing inside is markup.
        };
        let vocabulary = vocabulary();
        let lower = name.to_ascii_lowercase();
        if lower == "role"
            && let Some(role) = arguments.split(['(', ' ']).next().filter(|r| !r.is_empty())
        {
            self.custom_roles.insert(role.to_ascii_lowercase());
        }
        if vocabulary.body_directives.contains(&lower) {
            index + 1
        } else if vocabulary.literal_directives.contains(&lower) {
            end
        } else if vocabulary.disabled_directives.contains(&lower) {
            self.report(index, format!("\"{name}\" directive disabled."));
            end
        } else {
            self.report(index, format!("Unknown directive type \"{name}\"."));
            end
        }
    }

    /// `.. _name: url`, `` .. _`name`: url ``, `.. _name:` or `.. __: url`.
    fn explicit_target(&mut self, target: &str) {
        let name = match target.strip_prefix('`') {
            Some(quoted) => quoted.split_once("`:").map(|(name, _)| name),
            None => split_target_name(target),
        };
        let Some(name) = name else {
            return;
        };
        if name == "_" {
            return; // Anonymous.
        }
        self.define_target(name);
    }

    fn define_target(&mut self, name: &str) {
        self.targets.insert(normalize_name(name));
    }

    /// A section title starting at `index`, checked as docutils does; the
    /// line after it, or `None` when these lines are not a title.
    fn section_title(&mut self, index: usize) -> Option<usize> {
        let first = self.lines.get(index)?;
        let second = self.lines.get(index + 1).filter(|line| !line.is_empty())?;
        if let Some(over) = adornment(first) {
            if first.len() < 4 {
                return None; // Too short to be anything but text.
            }
            let title = second.trim();
            let Some(under) = self
                .lines
                .get(index + 2)
                .filter(|line| adornment(line).is_some())
            else {
                self.report(
                    index,
                    "Missing matching underline for section title overline.".to_owned(),
                );
                return Some(index + 2);
            };
            if under != first {
                self.report(index, "Title overline & underline mismatch.".to_owned());
            } else if title.chars().count() > first.len() {
                self.report(index, "Title overline too short.".to_owned());
            }
            self.enter_section(index, (over, true), title);
            return Some(index + 3);
        }
        let under = adornment(second)?;
        let title = first.as_str();
        if title.chars().count() > second.len() {
            if second.len() < 4 {
                return None; // docutils takes it as ordinary text.
            }
            self.report(index + 1, "Title underline too short.".to_owned());
        }
        self.enter_section(index, (under, false), title);
        Some(index + 2)
    }

    fn enter_section(&mut self, index: usize, style: (char, bool), title: &str) {
        let level = match self.title_styles.iter().position(|known| *known == style) {
            Some(position) => position + 1,
            None => self.title_styles.len() + 1,
        };
        if level > self.section_level + 1 {
            let current = self.section_level;
            self.report(
                index,
                format!("Inconsistent title style: skip from level {current} to {level}."),
            );
        } else {
            if level > self.title_styles.len() {
                self.title_styles.push(style);
            }
            self.section_level = level;
        }
        self.define_target(&title.replace(['`', '*'], ""));
    }

    /// Checks roles and named references on one line; returns whether an
    /// inline literal is still open at its end.
    fn inline_markup(&mut self, index: usize, content: &str, in_literal: bool) -> bool {
        let (text, still_open) = strip_inline_literals(content, in_literal);
        let chars: Vec<char> = text.chars().collect();
        let mut position = 0;
        while let Some(offset) = chars
            .get(position..)
            .and_then(|rest| rest.iter().position(|&c| c == '`'))
        {
            let open = position + offset;
            let Some(length) = chars
                .get(open + 1..)
                .and_then(|rest| rest.iter().position(|&c| c == '`'))
            else {
                if let Some(role) = role_before(&chars, open) {
                    self.check_role(index, &role);
                }
                break;
            };
            let close = open + 1 + length;
            if starts_inline_markup(&chars, open) {
                if let Some(role) = role_before(&chars, open) {
                    self.check_role(index, &role);
                }
                let after = (chars.get(close + 1), chars.get(close + 2));
                if after.0 == Some(&'_') && after.1 != Some(&'_') {
                    let phrase: String = chars
                        .get(open + 1..close)
                        .unwrap_or_default()
                        .iter()
                        .collect();
                    self.named_reference(index, &phrase);
                }
            }
            position = close + 1;
        }
        still_open
    }

    fn check_role(&mut self, index: usize, role: &str) {
        let vocabulary = vocabulary();
        let lower = role.to_ascii_lowercase();
        if vocabulary.roles.contains(&lower) || self.custom_roles.contains(&lower) {
            return;
        }
        let message = if vocabulary.disabled_roles.contains(&lower) {
            format!("raw (and derived) roles disabled: \"{role}\".")
        } else if vocabulary.unimplemented_roles.contains(&lower) {
            format!("Interpreted text role \"{role}\" not implemented.")
        } else {
            format!("Unknown interpreted text role \"{role}\".")
        };
        self.report(index, message);
    }

    /// `` `text`_ `` refers to a target; `` `text <url>`_ `` defines one.
    fn named_reference(&mut self, index: usize, phrase: &str) {
        if let Some((text, rest)) = phrase.rsplit_once('<')
            && let Some(url) = rest.strip_suffix('>')
        {
            if !text.trim().is_empty() && !url.ends_with('_') {
                self.define_target(text);
            }
            return;
        }
        self.references.push((index, normalize_name(phrase)));
    }
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_explicit_markup(content: &str) -> bool {
    content == ".." || content.starts_with(".. ")
}

/// The character of an adornment line (one punctuation character repeated).
fn adornment(line: &str) -> Option<char> {
    let first = line.chars().next().filter(is_adornment_char)?;
    line.chars().all(|c| c == first).then_some(first)
}

fn is_adornment_char(c: &char) -> bool {
    c.is_ascii_punctuation()
}

fn is_simple_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '.' | '_' | '+' | ':')
}

/// `name:: arguments` of a directive, if `body` is one.
fn parse_directive(body: &str) -> Option<(&str, &str)> {
    let (name, rest) = body.split_once("::")?;
    let name = name.trim_end();
    let valid = !name.is_empty()
        && name.chars().all(is_simple_name_char)
        && name.starts_with(char::is_alphanumeric);
    (valid && (rest.is_empty() || rest.starts_with(' '))).then(|| (name, rest.trim()))
}

/// The name of `name: url`: up to the first colon followed by a space or the end.
fn split_target_name(target: &str) -> Option<&str> {
    let mut search_from = 0;
    while let Some(offset) = target.get(search_from..)?.find(':') {
        let colon = search_from + offset;
        let rest = target.get(colon + 1..)?;
        if (rest.is_empty() || rest.starts_with(' ')) && !target[..colon].ends_with('\\') {
            return Some(&target[..colon]);
        }
        search_from = colon + 1;
    }
    None
}

/// docutils' reference name normalization: case and whitespace folded.
fn normalize_name(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The line without backslash escapes and ``inline literals``, which hide
/// markup; also whether a literal is left open at the end of the line.
fn strip_inline_literals(content: &str, in_literal: bool) -> (String, bool) {
    let mut text = String::with_capacity(content.len());
    let mut rest = content;
    if in_literal {
        match rest.find("``") {
            Some(end) => rest = &rest[end + 2..],
            None => return (text, true),
        }
    }
    let mut open = false;
    while let Some(start) = rest.find("``") {
        text.push_str(&rest[..start]);
        let literal = &rest[start + 2..];
        match literal.find("``") {
            Some(end) => rest = &literal[end + 2..],
            None => {
                open = true;
                rest = "";
            }
        }
    }
    text.push_str(rest);
    let mut unescaped = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
        } else {
            unescaped.push(c);
        }
    }
    (unescaped, open)
}

/// docutils starts inline markup only after whitespace, the line start or
/// opening punctuation, and never before whitespace.
fn starts_inline_markup(chars: &[char], open: usize) -> bool {
    let before_ok = open
        .checked_sub(1)
        .and_then(|i| chars.get(i))
        .is_none_or(|&c| c.is_whitespace() || "'\"([{<-/:‘“’«¡¿‐‑‒–— ".contains(c));
    let after_ok = chars.get(open + 1).is_some_and(|c| !c.is_whitespace());
    before_ok && after_ok
}

/// The role name of `:role:` written right before the backquote at `open`
/// (role names may contain `:` themselves, as in `:py:class:`).
fn role_before(chars: &[char], open: usize) -> Option<String> {
    let end = open
        .checked_sub(1)
        .filter(|&i| chars.get(i) == Some(&':'))?;
    let mut start = end;
    while start > 0
        && chars
            .get(start - 1)
            .is_some_and(|&c| is_simple_name_char(c))
    {
        start -= 1;
    }
    let run = chars.get(start..end)?;
    let name: String = run.strip_prefix(&[':'])?.iter().collect();
    (!name.is_empty() && !name.starts_with(':')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str) -> Vec<String> {
        check_rst(text)
            .into_iter()
            .map(|problem| format!("{}: {}", problem.line, problem.message))
            .collect()
    }

    #[test]
    fn vocabulary_file_parses() {
        assert!(vocabulary().roles.contains("code"));
    }

    #[test]
    fn accepts_a_typical_readme() {
        let text = "Demo\n====\n\nA *demo* with ``code`` and `a link <https://example.org>`_.\n\n\
            Usage\n-----\n\n.. code-block:: python\n\n   import demo\n   :func:`not checked`\n\n\
            Example::\n\n    $ demo --help\n\n.. note::\n   Mind :code:`x`.\n\n\
            .. _Usage section: https://example.org/usage\n\nSee `usage section`_ and `Demo`_.\n\n\
            .. image:: https://example.org/badge.svg\n   :alt: badge\n\n\
            =====  =====\nA      B\n=====  =====\n";
        assert_eq!(messages(text), Vec::<String>::new());
    }

    #[test]
    fn rejects_underline_shorter_than_title() {
        assert_eq!(
            messages("A long title\n=====\n\ntext\n"),
            ["2: Title underline too short."]
        );
    }

    #[test]
    fn takes_very_short_underline_as_text() {
        assert_eq!(messages("A long title\n===\n"), Vec::<String>::new());
    }

    #[test]
    fn rejects_overline_underline_mismatch_and_short_overline() {
        assert_eq!(
            messages("=====\nTitle\n-----\n"),
            ["1: Title overline & underline mismatch."]
        );
        assert_eq!(
            messages("====\nTitle!\n====\n"),
            ["1: Title overline too short."]
        );
    }

    #[test]
    fn rejects_skipped_title_level() {
        let text = "One\n===\n\nTwo\n---\n\nThree\n~~~~~\n\nFour\n====\n\nBad\n~~~\n";
        assert_eq!(
            messages(text),
            ["13: Inconsistent title style: skip from level 1 to 3."]
        );
    }

    #[test]
    fn rejects_unknown_and_disabled_directives() {
        let text = ".. autofunction:: demo.run\n\n.. raw:: html\n\n   <b>x</b>\n\n.. include:: other.rst\n";
        assert_eq!(
            messages(text),
            [
                "1: Unknown directive type \"autofunction\".",
                "3: \"raw\" directive disabled.",
                "7: \"include\" directive disabled."
            ]
        );
    }

    #[test]
    fn rejects_sphinx_roles_but_accepts_custom_ones() {
        assert_eq!(
            messages("Call :func:`run` or :py:class:`Demo`.\n"),
            [
                "1: Unknown interpreted text role \"func\".",
                "1: Unknown interpreted text role \"py:class\"."
            ]
        );
        assert_eq!(
            messages(".. role:: kbd\n\nPress :kbd:`q`.\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn ignores_markup_inside_literals_and_comments() {
        let text = "Use ``:func:`x``` here.\n\n.. this is a comment :func:`x`\n   .. unknown:: y\n\n\
            Code::\n\n    .. unknown:: z\n";
        assert_eq!(messages(text), Vec::<String>::new());
    }

    #[test]
    fn rejects_missing_literal_block() {
        assert_eq!(
            messages("Example::\n\nnot indented\n"),
            ["3: Literal block expected; none found."]
        );
    }

    #[test]
    fn rejects_text_right_after_explicit_markup() {
        assert_eq!(
            messages(".. image:: a.png\nText\n"),
            ["2: Explicit markup ends without a blank line; unexpected unindent."]
        );
        assert_eq!(
            messages(".. _a: https://a\n.. _b: https://b\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn rejects_reference_without_target() {
        assert_eq!(
            messages("See `the docs`_.\n"),
            ["1: Unknown target name: \"the docs\"."]
        );
    }

    #[test]
    fn accepts_one_link_text_for_two_urls_as_docutils_now_does() {
        let text = "`docs <https://a>`_ and `docs <https://b>`_\n";
        assert_eq!(messages(text), Vec::<String>::new());
    }
}
