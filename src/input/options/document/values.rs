//! One option's value read from its TOML form: strings in the form its `CROSSWHEEL_*`
//! variable takes, and the arrays and tables a configuration file may use instead.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Reader, described, in_file_order, table_start};
use crate::input::options::error::{OptionsError, Origin};
use crate::input::options::schema::{self, Kind, OptionSpec};
use crate::input::options::shell::{self, Environment};
use crate::input::options::types::BuildFrontend;
use crate::input::options::value::{self, Setting};
use crate::support::host::shell_quote;

impl Reader<'_> {
    pub(super) fn read_value(
        &self,
        spec: &OptionSpec,
        value: &Spanned<DeValue<'_>>,
    ) -> Result<Setting, OptionsError> {
        self.read_kind(spec.key, spec.kind, value)
    }

    pub(super) fn read_kind(
        &self,
        key: &str,
        kind: Kind,
        value: &Spanned<DeValue<'_>>,
    ) -> Result<Setting, OptionsError> {
        let origin = self.origin(value.span().start);
        let invalid = |message| OptionsError::InvalidValue {
            origin: origin.clone(),
            key: key.to_string(),
            message,
        };
        let wrong_type = |found| OptionsError::WrongType {
            origin: origin.clone(),
            key: key.to_string(),
            expected: kind.expected(),
            found,
        };
        match (value.get_ref(), kind) {
            // Not read: reported as ignored. Its type is whatever cibuildwheel's is.
            (_, Kind::Ignored) => Ok(Setting::Text(String::new())),
            (DeValue::Integer(_), Kind::Verbosity | Kind::Duration) => {
                let text = self.scalar_text(key, value)?;
                value::parse_text(kind, &text).map_err(invalid)
            }
            (DeValue::Boolean(flag), Kind::Bool) => Ok(Setting::Bool(*flag)),
            (DeValue::Table(table), Kind::DependencyVersions) => {
                self.read_dependency_versions(key, table)
            }
            (DeValue::String(text), _) => value::parse_text(kind, text).map_err(invalid),
            (DeValue::Array(items), _) if value::accepts_array(kind) => {
                let mut strings = Vec::new();
                for item in items.iter() {
                    match item.get_ref() {
                        DeValue::String(text) => strings.push(text.to_string()),
                        other => {
                            return Err(OptionsError::WrongType {
                                origin: self.origin(item.span().start),
                                key: key.to_string(),
                                expected: kind.expected(),
                                found: array_of(other),
                            });
                        }
                    }
                }
                value::parse_list(kind, strings).map_err(invalid)
            }
            (DeValue::Table(table), Kind::Environment) => {
                self.read_environment_table(key, table, &origin)
            }
            (DeValue::Table(table), Kind::ConfigSettings) => {
                self.read_config_settings_table(key, table)
            }
            (DeValue::Table(table), Kind::Frontend) => self.read_frontend_table(key, table),
            (other, _) => Err(wrong_type(described(other))),
        }
    }

    /// `environment = { NAME = "value" }`: each value in the form a string value's
    /// assignments take (`$VAR` and `$(...)` allowed), in file order.
    fn read_environment_table(
        &self,
        key: &str,
        table: &DeTable<'_>,
        origin: &Origin,
    ) -> Result<Setting, OptionsError> {
        let invalid = |message| OptionsError::InvalidValue {
            origin: origin.clone(),
            key: key.to_string(),
            message,
        };
        let mut environment = Environment::default();
        for (name, entry) in in_file_order(table) {
            let name: &str = name.get_ref();
            if !shell::is_variable_name(name) {
                return Err(invalid(format!("`{name}` is not a valid variable name")));
            }
            let text = self.scalar_text(key, entry)?;
            let parts = shell::parse_environment_value(&text).map_err(invalid)?;
            environment.assignments.push(shell::EnvAssignment {
                name: name.to_string(),
                value: parts,
            });
        }
        Ok(Setting::Env(environment))
    }

    /// `config-settings = { key = "value", other = ["a", "b"] }`, in file order.
    fn read_config_settings_table(
        &self,
        key: &str,
        table: &DeTable<'_>,
    ) -> Result<Setting, OptionsError> {
        let mut pairs = Vec::new();
        for (name, entry) in in_file_order(table) {
            let name: &str = name.get_ref();
            match entry.get_ref() {
                // A list repeats the key, as `-C key=a -C key=b` does.
                DeValue::Array(items) => {
                    for item in items.iter() {
                        pairs.push((name.to_string(), self.scalar_text(key, item)?));
                    }
                }
                _ => pairs.push((name.to_string(), self.scalar_text(key, entry)?)),
            }
        }
        Ok(Setting::Pairs(pairs))
    }

    fn read_frontend_table(&self, key: &str, table: &DeTable<'_>) -> Result<Setting, OptionsError> {
        let mut name = None;
        let mut args = Vec::new();
        for (entry_key, entry) in in_file_order(table) {
            let origin = self.origin(entry_key.span().start);
            match &**entry_key.get_ref() {
                "name" => name = Some((self.scalar_text(key, entry)?, origin)),
                "args" => {
                    args = self.read_kind(key, Kind::ShellWords, entry)?.list();
                }
                other => {
                    return Err(OptionsError::UnknownKey {
                        origin,
                        key: other.to_string(),
                        table: format!("`{key}`"),
                        suggestion: schema::closest(other, ["name", "args"]).map(String::from),
                    });
                }
            }
        }
        let (name, origin) = name.ok_or_else(|| OptionsError::InvalidValue {
            origin: self.origin(table_start(table)),
            key: key.to_string(),
            message: "the table needs `name`, e.g. { name = \"build\" }".to_string(),
        })?;
        BuildFrontend::new(&name, args)
            .map(Setting::Frontend)
            .map_err(|message| OptionsError::InvalidValue {
                origin,
                key: key.to_string(),
                message,
            })
    }

    /// `dependency-versions = { file = "constraints.txt" }` or `{ packages = [...] }`, in
    /// the string form (`packages: a==1 b==2`, or the file's path).
    fn read_dependency_versions(
        &self,
        key: &str,
        table: &DeTable<'_>,
    ) -> Result<Setting, OptionsError> {
        let mut text = None;
        for (entry_key, entry) in in_file_order(table) {
            let origin = self.origin(entry_key.span().start);
            match &**entry_key.get_ref() {
                "file" => text = Some(self.scalar_text(key, entry)?),
                "packages" => {
                    let packages = self.read_kind(key, Kind::ShellWords, entry)?.list();
                    let quoted: Vec<_> = packages.iter().map(|p| shell_quote(p)).collect();
                    text = Some(format!("packages: {}", quoted.join(" ")));
                }
                other => {
                    return Err(OptionsError::UnknownKey {
                        origin,
                        key: other.to_string(),
                        table: format!("`{key}`"),
                        suggestion: schema::closest(other, ["file", "packages"]).map(String::from),
                    });
                }
            }
        }
        let text = text.ok_or_else(|| OptionsError::InvalidValue {
            origin: self.origin(table_start(table)),
            key: key.to_string(),
            message: "the table needs `file` or `packages`".to_string(),
        })?;
        Ok(Setting::Text(text))
    }

    /// A table entry's value as text: strings as they are, integers and booleans written out
    /// (`OMP_NUM_THREADS = 1` is common).
    fn scalar_text(&self, key: &str, value: &Spanned<DeValue<'_>>) -> Result<String, OptionsError> {
        match value.get_ref() {
            DeValue::String(text) => Ok(text.to_string()),
            DeValue::Boolean(flag) => Ok(flag.to_string()),
            DeValue::Integer(integer) => i64::from_str_radix(integer.as_str(), integer.radix())
                .map(|number| number.to_string())
                .map_err(|_| OptionsError::InvalidValue {
                    origin: self.origin(value.span().start),
                    key: key.to_string(),
                    message: format!("integer {} is out of range", integer.as_str()),
                }),
            other => Err(OptionsError::WrongType {
                origin: self.origin(value.span().start),
                key: key.to_string(),
                expected: "a table of strings",
                found: described(other),
            }),
        }
    }
}

fn array_of(item: &DeValue<'_>) -> &'static str {
    match item {
        DeValue::Integer(_) => "an array holding an integer",
        DeValue::Float(_) => "an array holding a float",
        DeValue::Boolean(_) => "an array holding a boolean",
        DeValue::Table(_) => "an array holding a table",
        DeValue::Array(_) => "an array holding an array",
        DeValue::String(_) | DeValue::Datetime(_) => "an array holding a date",
    }
}
