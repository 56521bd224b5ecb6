//! Quoting for the host's POSIX shell: the scripts crosswheel writes (compiler wrappers,
//! `crosswheel toolchain env`, test runs) and the placeholders it fills in configured
//! commands all quote one way.

use std::borrow::Cow;

/// Quotes `value` for a POSIX shell when it holds anything but plain path characters.
pub fn shell_quote(value: &str) -> Cow<'_, str> {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("'{}'", value.replace('\'', r"'\''")))
    }
}

/// [`shell_quote`] of a path, for the scripts crosswheel writes.
pub fn shell_quote_path(path: &std::path::Path) -> String {
    shell_quote(&path.to_string_lossy()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_words_the_shell_would_split_or_expand() {
        assert_eq!(shell_quote("/tmp/a-b_c.whl"), "/tmp/a-b_c.whl");
        assert_eq!(shell_quote("/usr/bin/cc"), "/usr/bin/cc");
        assert_eq!(shell_quote("/tmp/my dir"), "'/tmp/my dir'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
        assert_eq!(shell_quote(""), "''");
    }
}
