//! Shell-like parsing of option strings, with cibuildwheel's quoting rules: words split on
//! whitespace, `'...'` is literal, `"..."` keeps spaces and expands `$NAME`, a backslash
//! escapes one character. `environment` values keep their variable references and command
//! substitutions (`$(...)`, backticks) so they are evaluated against the build's
//! environment, not crosswheel's, by a shell, as cibuildwheel does.

use std::collections::BTreeMap;
use std::path::Path;

/// One piece of an environment value: text, a reference to a variable (`$PATH`), or a
/// command whose output is the value (`$(pwd)`, `` `pwd` ``).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvPart {
    Literal(String),
    Variable(String),
    Command(String),
}

/// `NAME=value` from the `environment` option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvAssignment {
    pub name: String,
    pub value: Vec<EnvPart>,
}

impl EnvAssignment {
    /// An assignment of a fixed value (no variable expansion), e.g. a passed-through variable.
    pub fn literal(name: &str, value: &str) -> EnvAssignment {
        EnvAssignment {
            name: name.to_string(),
            value: vec![EnvPart::Literal(value.to_string())],
        }
    }
}

/// The `environment` option: assignments applied in order, each one seeing the earlier ones
/// (`PATH=$HOME/bin:$PATH` works as in a shell).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    pub assignments: Vec<EnvAssignment>,
}

impl Environment {
    /// Applies the assignments to `vars` (the whole environment so far); an unset variable
    /// expands to an empty string, and a command substitution runs `sh -c` in `cwd` with
    /// `vars` as its environment, its output without trailing newlines taking its place. A
    /// failing command is an error, as in cibuildwheel.
    pub fn apply(&self, vars: &mut BTreeMap<String, String>, cwd: &Path) -> Result<(), String> {
        for assignment in &self.assignments {
            let mut value = String::new();
            for part in &assignment.value {
                match part {
                    EnvPart::Literal(text) => value.push_str(text),
                    EnvPart::Variable(name) => {
                        value.push_str(vars.get(name).map_or("", String::as_str));
                    }
                    EnvPart::Command(command) => {
                        value.push_str(&command_output(command, vars, cwd).map_err(|reason| {
                            format!("`{}`: `$({command})` {reason}", assignment.name)
                        })?);
                    }
                }
            }
            vars.insert(assignment.name.clone(), value);
        }
        Ok(())
    }

    /// Whether evaluating the assignments runs commands.
    pub fn runs_commands(&self) -> bool {
        self.assignments.iter().any(|assignment| {
            assignment
                .value
                .iter()
                .any(|part| matches!(part, EnvPart::Command(_)))
        })
    }

    pub fn is_empty(&self) -> bool {
        self.assignments.is_empty()
    }
}

/// Runs a command substitution's command and returns its output as a shell would.
fn command_output(
    command: &str,
    vars: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<String, String> {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(vars)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|err| format!("could not start sh: {err}"))?;
    if !output.status.success() {
        return Err(format!("failed ({})", output.status));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text.trim_end_matches('\n').to_string())
}

type Word = Vec<EnvPart>;

/// Splits `text` into words like a POSIX shell would, without expanding anything.
pub(crate) fn split_words(text: &str) -> Result<Vec<String>, String> {
    let words = Tokenizer::new(text, false).words()?;
    Ok(words.into_iter().map(|word| literal_text(&word)).collect())
}

/// Parses `NAME=value NAME2="value with $VARS"` (the string form of `environment`).
pub(crate) fn parse_environment(text: &str) -> Result<Environment, String> {
    let words = Tokenizer::new(text, true).words()?;
    let assignments = words
        .into_iter()
        .map(assignment_from_word)
        .collect::<Result<_, _>>()?;
    Ok(Environment { assignments })
}

/// Parses one value of the table form of `environment`: the text is read as if it stood
/// between double quotes, so spaces stay and `$NAME` expands.
pub(crate) fn parse_environment_value(text: &str) -> Result<Vec<EnvPart>, String> {
    let mut tokenizer = Tokenizer::new(text, true);
    let mut word = Vec::new();
    tokenizer.double_quoted(&mut word, false)?;
    Ok(word)
}

/// True for names a shell accepts as variable names.
pub(crate) fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Replaces `{name}` for each given placeholder; other braces are left alone, so shell code
/// such as `${HOME}` or `{a,b}` in a command survives.
pub fn fill_placeholders(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    'scan: while let Some(start) = rest.find('{') {
        let (before, from_brace) = rest.split_at(start);
        out.push_str(before);
        for (name, value) in values {
            if let Some(after) = from_brace
                .strip_prefix('{')
                .and_then(|inner| inner.strip_prefix(name))
                .and_then(|inner| inner.strip_prefix('}'))
            {
                out.push_str(value);
                rest = after;
                continue 'scan;
            }
        }
        out.push('{');
        rest = from_brace.strip_prefix('{').unwrap_or(from_brace);
    }
    out.push_str(rest);
    out
}

fn literal_text(word: &[EnvPart]) -> String {
    word.iter()
        .map(|part| match part {
            EnvPart::Literal(text) => text.clone(),
            EnvPart::Variable(name) => format!("${name}"),
            EnvPart::Command(command) => format!("$({command})"),
        })
        .collect()
}

fn assignment_from_word(word: Word) -> Result<EnvAssignment, String> {
    let shown = literal_text(&word);
    let mut parts = word.into_iter();
    let Some(EnvPart::Literal(first)) = parts.next() else {
        return Err(format!("`{shown}` is not a NAME=VALUE assignment"));
    };
    let Some((name, value_start)) = first.split_once('=') else {
        return Err(format!("`{shown}` is not a NAME=VALUE assignment"));
    };
    if !is_variable_name(name) {
        return Err(format!(
            "`{name}` in `{shown}` is not a valid variable name"
        ));
    }
    let mut value = Vec::new();
    if !value_start.is_empty() {
        value.push(EnvPart::Literal(value_start.to_string()));
    }
    value.extend(parts);
    Ok(EnvAssignment {
        name: name.to_string(),
        value,
    })
}

struct Tokenizer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    /// Whether `$NAME` is a variable reference (environment) or plain text (word lists).
    expand: bool,
}

impl<'a> Tokenizer<'a> {
    fn new(text: &'a str, expand: bool) -> Self {
        Tokenizer {
            chars: text.chars().peekable(),
            expand,
        }
    }

    fn words(mut self) -> Result<Vec<Word>, String> {
        let mut words = Vec::new();
        let mut word = Vec::new();
        // `''` is an empty word, not no word: track whether a word has begun.
        let mut in_word = false;
        while let Some(c) = self.chars.next() {
            match c {
                c if c.is_whitespace() => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                '\'' => {
                    in_word = true;
                    let mut text = String::new();
                    loop {
                        match self.chars.next() {
                            Some('\'') => break,
                            Some(c) => text.push(c),
                            None => return Err("unterminated single quote".to_string()),
                        }
                    }
                    push_literal(&mut word, &text);
                }
                '"' => {
                    in_word = true;
                    self.double_quoted(&mut word, true)?;
                }
                '\\' => {
                    in_word = true;
                    if let Some(escaped) = self.chars.next() {
                        push_char(&mut word, escaped);
                    }
                }
                '$' if self.expand => {
                    in_word = true;
                    self.dollar(&mut word)?;
                }
                '`' if self.expand => {
                    in_word = true;
                    self.backticks(&mut word)?;
                }
                c => {
                    in_word = true;
                    push_char(&mut word, c);
                }
            }
        }
        if in_word {
            words.push(word);
        }
        Ok(words)
    }

    /// Reads up to the closing `"` (or the end of the text when `terminated` is false).
    fn double_quoted(&mut self, word: &mut Word, terminated: bool) -> Result<(), String> {
        loop {
            match self.chars.next() {
                Some('"') if terminated => return Ok(()),
                Some('\\') => match self.chars.peek().copied() {
                    Some(escaped @ ('$' | '`' | '"' | '\\')) => {
                        self.chars.next();
                        push_char(word, escaped);
                    }
                    Some('\n') => {
                        self.chars.next();
                    }
                    _ => push_char(word, '\\'),
                },
                Some('$') if self.expand => self.dollar(word)?,
                Some('`') if self.expand => self.backticks(word)?,
                Some(c) => push_char(word, c),
                None if terminated => return Err("unterminated double quote".to_string()),
                None => return Ok(()),
            }
        }
    }

    /// After a `$`: `$NAME`, `${NAME}`, or a literal dollar.
    fn dollar(&mut self, word: &mut Word) -> Result<(), String> {
        match self.chars.peek().copied() {
            Some('{') => {
                self.chars.next();
                let mut name = String::new();
                loop {
                    match self.chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => return Err("unterminated `${`".to_string()),
                    }
                }
                if !is_variable_name(&name) {
                    return Err(format!(
                        "`${{{name}}}` is not supported: only `$NAME` and `${{NAME}}` expand"
                    ));
                }
                word.push(EnvPart::Variable(name));
            }
            Some('(') => {
                self.chars.next();
                if self.chars.peek() == Some(&'(') {
                    return Err(
                        "arithmetic expansion `$((...))` is not supported: compute the value in a command substitution, e.g. `$(expr 1 + 2)`".to_string(),
                    );
                }
                let command = self.parenthesised()?;
                word.push(EnvPart::Command(command));
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let mut name = String::new();
                while let Some(&c) = self.chars.peek() {
                    if c != '_' && !c.is_ascii_alphanumeric() {
                        break;
                    }
                    name.push(c);
                    self.chars.next();
                }
                word.push(EnvPart::Variable(name));
            }
            _ => push_char(word, '$'),
        }
        Ok(())
    }
}

impl Tokenizer<'_> {
    /// After `$(`: the command up to the matching `)`, with nested parentheses and quotes.
    fn parenthesised(&mut self) -> Result<String, String> {
        let mut command = String::new();
        let mut depth = 0usize;
        loop {
            let Some(c) = self.chars.next() else {
                return Err("unterminated `$(`".to_string());
            };
            match c {
                ')' if depth == 0 => return Ok(command),
                ')' => depth -= 1,
                '(' => depth += 1,
                '\'' | '"' => {
                    command.push(c);
                    loop {
                        match self.chars.next() {
                            Some(inner) if inner == c => break,
                            Some('\\') if c == '"' => {
                                command.push('\\');
                                if let Some(escaped) = self.chars.next() {
                                    command.push(escaped);
                                }
                                continue;
                            }
                            Some(inner) => command.push(inner),
                            None => return Err("unterminated quote inside `$(`".to_string()),
                        }
                    }
                }
                '\\' => {
                    command.push(c);
                    if let Some(escaped) = self.chars.next() {
                        command.push(escaped);
                    }
                    continue;
                }
                _ => {}
            }
            command.push(c);
        }
    }

    /// After a backtick: the command up to the next unescaped backtick.
    fn backticks(&mut self, word: &mut Word) -> Result<(), String> {
        let mut command = String::new();
        loop {
            match self.chars.next() {
                Some('`') => break,
                Some('\\') => match self.chars.next() {
                    Some(escaped @ ('`' | '$' | '\\')) => command.push(escaped),
                    Some(other) => {
                        command.push('\\');
                        command.push(other);
                    }
                    None => command.push('\\'),
                },
                Some(c) => command.push(c),
                None => return Err("unterminated backtick".to_string()),
            }
        }
        word.push(EnvPart::Command(command));
        Ok(())
    }
}

fn push_char(word: &mut Word, c: char) {
    match word.last_mut() {
        Some(EnvPart::Literal(text)) => text.push(c),
        _ => word.push(EnvPart::Literal(c.to_string())),
    }
}

fn push_literal(word: &mut Word, text: &str) {
    match word.last_mut() {
        Some(EnvPart::Literal(existing)) => existing.push_str(text),
        _ => word.push(EnvPart::Literal(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(text: &str) -> EnvPart {
        EnvPart::Literal(text.to_string())
    }

    fn var(name: &str) -> EnvPart {
        EnvPart::Variable(name.to_string())
    }

    #[test]
    fn splits_words_with_quotes_and_escapes() {
        assert_eq!(
            split_words(r#"a 'b c' "d \"e\"" f\ g '' $HOME"#).unwrap(),
            ["a", "b c", r#"d "e""#, "f g", "", "$HOME"]
        );
    }

    #[test]
    fn rejects_unterminated_quotes() {
        assert!(split_words("'open").unwrap_err().contains("single quote"));
        assert!(split_words("\"open").unwrap_err().contains("double quote"));
    }

    #[test]
    fn parses_environment_like_cibuildwheel() {
        let env = parse_environment(r#"CFLAGS="-O3 -g" PATH=$HOME/bin:${PATH} LIT='$X'"#).unwrap();
        let got: Vec<_> = env
            .assignments
            .iter()
            .map(|a| (a.name.as_str(), a.value.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("CFLAGS", vec![lit("-O3 -g")]),
                ("PATH", vec![var("HOME"), lit("/bin:"), var("PATH")]),
                ("LIT", vec![lit("$X")]),
            ]
        );
    }

    #[test]
    fn environment_assignments_see_earlier_ones() {
        let env = parse_environment("A=1 B=$A$A C=${UNSET}x").unwrap();
        let mut vars = BTreeMap::from([("A".to_string(), "0".to_string())]);
        env.apply(&mut vars, Path::new("/")).unwrap();
        assert_eq!(vars["B"], "11");
        assert_eq!(vars["C"], "x");
    }

    #[test]
    fn rejects_words_that_are_not_assignments() {
        assert!(parse_environment("FOO").unwrap_err().contains("NAME=VALUE"));
        assert!(
            parse_environment("1X=2")
                .unwrap_err()
                .contains("variable name")
        );
    }

    #[test]
    fn command_substitutions_run_in_a_shell_with_the_environment_so_far() {
        let env = parse_environment(
            r#"A=x B="$(echo "$A y")" C=`echo $B`/z D=$(printf '%s' "(p)") E="$(cd / && pwd)""#,
        )
        .unwrap();
        assert!(env.runs_commands());
        let path = std::env::var("PATH").unwrap_or_default();
        let mut vars = BTreeMap::from([("PATH".to_string(), path)]);
        env.apply(&mut vars, Path::new("/tmp")).unwrap();
        assert_eq!(vars["B"], "x y");
        assert_eq!(vars["C"], "x y/z");
        assert_eq!(vars["D"], "(p)");
        assert_eq!(vars["E"], "/");
        let failing = parse_environment("F=$(exit 3)").unwrap();
        let err = failing.apply(&mut vars, Path::new("/")).unwrap_err();
        assert!(err.contains("`F`") && err.contains("exit 3"), "{err}");
        assert!(parse_environment("G=$(unclosed").is_err());
        assert!(parse_environment("H=$((1+2))").is_err());
    }

    #[test]
    fn table_values_read_as_double_quoted() {
        assert_eq!(
            parse_environment_value("$PATH:/opt/my bin").unwrap(),
            [var("PATH"), lit(":/opt/my bin")]
        );
    }

    #[test]
    fn fills_known_placeholders_and_keeps_other_braces() {
        let filled = fill_placeholders(
            "cp {wheel} ${HOME}/{dest_dir} {unknown} {",
            &[("wheel", "a.whl"), ("dest_dir", "out")],
        );
        assert_eq!(filled, "cp a.whl ${HOME}/out {unknown} {");
    }
}
