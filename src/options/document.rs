//! Reads `[tool.crosswheel]` (with its platform tables and overrides) from a TOML file,
//! keeping the line of every value so that errors can point at it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::cibw;
use super::error::{OptionsError, Origin};
use super::identifiers::Platform;
use super::schema::{self, Kind, OptionSpec, Scope};
use super::selector::Selector;
use super::shell::{self, Environment};
use super::types::BuildFrontend;
use super::value::{self, Inherit, Located, Setting};
use crate::host::shell_quote;

/// The settings of one table, by canonical option name.
pub(crate) type Layer = BTreeMap<&'static str, Located>;

/// One `[[tool.crosswheel.overrides]]` entry.
#[derive(Debug)]
pub(crate) struct Override {
    pub select: Selector,
    pub values: Layer,
    pub inherit: BTreeMap<&'static str, Inherit>,
}

/// Everything a configuration file says.
#[derive(Debug, Default)]
pub(crate) struct ConfigDocument {
    pub global: Layer,
    pub platforms: BTreeMap<Platform, Layer>,
    pub overrides: Vec<Override>,
    /// The table that was read (`tool.crosswheel`), `None` when the file has none.
    pub table: Option<String>,
    /// Options and platform tables present that do not apply to cross builds
    /// (`manylinux-x86_64-image`, `[windows]`), in file order.
    pub ignored: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Top,
    Platform,
    /// A platform table crosswheel builds nothing for (`[windows]`): its keys must be
    /// options, its values are not read.
    ForeignPlatform,
    Override,
}

impl ConfigDocument {
    /// Reads the table at `table_path` (`["tool", "crosswheel"]` in a pyproject.toml); a
    /// document without that table configures nothing. Every problem of the table is
    /// reported, not just the first.
    pub(crate) fn parse(
        path: &Path,
        text: &str,
        table_path: &[&str],
    ) -> Result<ConfigDocument, OptionsError> {
        let reader = Reader {
            path,
            text,
            errors: RefCell::new(Vec::new()),
        };
        let root = DeTable::parse(text).map_err(|err| OptionsError::Syntax {
            path: path.to_path_buf(),
            line: err.span().map_or(1, |span| reader.line(span.start)),
            message: err.message().trim().to_string(),
        })?;
        let mut table = root.get_ref();
        let mut table_name = String::new();
        for part in table_path {
            let Some(value) = table.get(*part) else {
                return Ok(ConfigDocument::default());
            };
            if !table_name.is_empty() {
                table_name.push('.');
            }
            table_name.push_str(part);
            table = match value.get_ref() {
                DeValue::Table(inner) => inner,
                other => {
                    return Err(OptionsError::WrongType {
                        origin: reader.origin(value.span().start),
                        key: table_name,
                        expected: "a table",
                        found: described(other),
                    });
                }
            };
        }
        let mut document = ConfigDocument {
            table: Some(table_name.clone()),
            ..ConfigDocument::default()
        };
        reader.read_table(table, &table_name, Level::Top, &mut document);
        OptionsError::from_all(reader.errors.into_inner())?;
        Ok(document)
    }
}

struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
    /// Every problem found so far; reading goes on past each.
    errors: RefCell<Vec<OptionsError>>,
}

impl Reader<'_> {
    fn line(&self, offset: usize) -> usize {
        let before = self.text.get(..offset).unwrap_or(self.text);
        before.bytes().filter(|&b| b == b'\n').count() + 1
    }

    fn origin(&self, offset: usize) -> Origin {
        Origin::File {
            path: PathBuf::from(self.path),
            line: self.line(offset),
        }
    }

    /// Keeps the value, or records the problem and gives `None`.
    fn keep<T>(&self, result: Result<T, OptionsError>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.errors.borrow_mut().push(error);
                None
            }
        }
    }

    fn read_table(
        &self,
        table: &DeTable<'_>,
        table_name: &str,
        level: Level,
        document: &mut ConfigDocument,
    ) {
        let mut layer = Layer::new();
        let mut select = None;
        let mut select_seen = false;
        let mut inherit = None;
        for (key, value) in in_file_order(table) {
            let name: &str = key.get_ref();
            if level == Level::Top && self.read_top_platform_table(key, value, table_name, document)
            {
                continue;
            }
            let origin = self.origin(key.span().start);
            match (level, name) {
                (Level::Top, "overrides") => {
                    self.read_overrides(value, table_name, document);
                    continue;
                }
                (Level::Override, "select") => {
                    select_seen = true;
                    select = self.keep(self.read_select(value, origin));
                    continue;
                }
                (Level::Override, "inherit") => {
                    inherit = self.keep(self.read_inherit(value, origin));
                    continue;
                }
                _ => {}
            }
            let Some(spec) = schema::find(name) else {
                self.keep::<()>(Err(unknown_key(name, table_name, level, origin)));
                continue;
            };
            if level == Level::ForeignPlatform {
                continue;
            }
            if level == Level::Override && !overridable(spec) {
                self.keep::<()>(Err(OptionsError::NotOverridable {
                    origin,
                    key: name.to_string(),
                    table: table_name.to_string(),
                }));
                continue;
            }
            if spec.kind == Kind::Ignored {
                push_once(&mut document.ignored, name.to_string());
            }
            let Some(setting) = self.keep(self.read_value(spec, value)) else {
                continue;
            };
            let canonical = schema::canonical_key(spec.key);
            if layer.contains_key(canonical) {
                self.keep::<()>(Err(OptionsError::ArchsAndTargets { origin }));
                continue;
            }
            layer.insert(canonical, Located { setting, origin });
        }
        match level {
            Level::Override => {
                if !select_seen {
                    self.keep::<()>(Err(OptionsError::InvalidValue {
                        origin: self.origin(table_start(table)),
                        key: "select".to_string(),
                        message: format!(
                            "every {table_name} entry needs `select`, e.g. select = \"cp311-*\""
                        ),
                    }));
                }
                if let Some(select) = select {
                    document.overrides.push(Override {
                        select,
                        values: layer,
                        inherit: inherit.unwrap_or_default(),
                    });
                }
            }
            Level::Top | Level::Platform => document.global = layer,
            Level::ForeignPlatform => {}
        }
    }

    /// A `[linux]`/`[macos]` table (or cibuildwheel's tables of other platforms, which are
    /// checked and ignored) inside the top table; `false` when `key` names no platform.
    fn read_top_platform_table(
        &self,
        key: &Spanned<std::borrow::Cow<'_, str>>,
        value: &Spanned<DeValue<'_>>,
        table_name: &str,
        document: &mut ConfigDocument,
    ) -> bool {
        let name: &str = key.get_ref();
        let origin = self.origin(key.span().start);
        if let Some(platform) = Platform::from_name(name) {
            let read = self.read_platform_table(
                value,
                table_name,
                name,
                origin,
                Level::Platform,
                &mut document.ignored,
            );
            if let Some(platform_layer) = self.keep(read) {
                document.platforms.insert(platform, platform_layer);
            }
            return true;
        }
        if cibw::foreign_platform_tables().any(|foreign| foreign == name) {
            let read = self.read_platform_table(
                value,
                table_name,
                name,
                origin,
                Level::ForeignPlatform,
                &mut Vec::new(),
            );
            if self.keep(read).is_some() {
                push_once(&mut document.ignored, format!("[{name}]"));
            }
            return true;
        }
        false
    }

    fn read_platform_table(
        &self,
        value: &Spanned<DeValue<'_>>,
        table_name: &str,
        platform_name: &str,
        origin: Origin,
        level: Level,
        ignored: &mut Vec<String>,
    ) -> Result<Layer, OptionsError> {
        let platform_table = format!("{table_name}.{platform_name}");
        let DeValue::Table(inner) = value.get_ref() else {
            return Err(OptionsError::WrongType {
                origin,
                key: platform_table,
                expected: "a table",
                found: described(value.get_ref()),
            });
        };
        let mut platform_document = ConfigDocument::default();
        self.read_table(inner, &platform_table, level, &mut platform_document);
        for name in platform_document.ignored {
            push_once(ignored, name);
        }
        Ok(platform_document.global)
    }

    fn read_overrides(
        &self,
        value: &Spanned<DeValue<'_>>,
        table_name: &str,
        document: &mut ConfigDocument,
    ) {
        let wrong_type = |found| OptionsError::WrongType {
            origin: self.origin(value.span().start),
            key: format!("{table_name}.overrides"),
            expected: "an array of tables ([[tool.crosswheel.overrides]])",
            found,
        };
        let DeValue::Array(entries) = value.get_ref() else {
            self.keep::<()>(Err(wrong_type(described(value.get_ref()))));
            return;
        };
        for entry in entries.iter() {
            let DeValue::Table(table) = entry.get_ref() else {
                self.keep::<()>(Err(wrong_type(described(entry.get_ref()))));
                continue;
            };
            let mut entry_document = ConfigDocument::default();
            let name = format!("[[{table_name}.overrides]]");
            self.read_table(table, &name, Level::Override, &mut entry_document);
            document.overrides.append(&mut entry_document.overrides);
            for ignored in entry_document.ignored {
                push_once(&mut document.ignored, ignored);
            }
        }
    }

    fn read_select(
        &self,
        value: &Spanned<DeValue<'_>>,
        origin: Origin,
    ) -> Result<Selector, OptionsError> {
        let setting = self.read_kind("select", Kind::Selector, value)?;
        let selector =
            Selector::new(&setting.list()).map_err(|message| OptionsError::InvalidValue {
                origin: origin.clone(),
                key: "select".to_string(),
                message,
            })?;
        if selector.is_empty() {
            return Err(OptionsError::InvalidValue {
                origin,
                key: "select".to_string(),
                message: "no pattern given: the override would apply to nothing".to_string(),
            });
        }
        Ok(selector)
    }

    fn read_inherit(
        &self,
        value: &Spanned<DeValue<'_>>,
        origin: Origin,
    ) -> Result<BTreeMap<&'static str, Inherit>, OptionsError> {
        let DeValue::Table(table) = value.get_ref() else {
            return Err(OptionsError::WrongType {
                origin,
                key: "inherit".to_string(),
                expected: "a table such as { test-command = \"append\" }",
                found: described(value.get_ref()),
            });
        };
        let mut rules = BTreeMap::new();
        for (key, rule) in in_file_order(table) {
            let origin = self.origin(key.span().start);
            let name: &str = key.get_ref();
            let Some(spec) = schema::find(name) else {
                return Err(unknown_key(name, "inherit", Level::Override, origin));
            };
            if !spec.kind.accepts_inherit() {
                return Err(OptionsError::InvalidValue {
                    origin,
                    key: format!("inherit.{name}"),
                    message: format!(
                        "`{name}` is a single value; only commands, lists and tables can be inherited"
                    ),
                });
            }
            let parsed = rule
                .get_ref()
                .as_str()
                .and_then(Inherit::parse)
                .ok_or_else(|| OptionsError::InvalidValue {
                    origin,
                    key: format!("inherit.{name}"),
                    message: "use \"none\", \"append\" or \"prepend\"".to_string(),
                })?;
            rules.insert(schema::canonical_key(spec.key), parsed);
        }
        Ok(rules)
    }

    fn read_value(
        &self,
        spec: &OptionSpec,
        value: &Spanned<DeValue<'_>>,
    ) -> Result<Setting, OptionsError> {
        self.read_kind(spec.key, spec.kind, value)
    }

    fn read_kind(
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
            (DeValue::Boolean(flag), Kind::Bool) => Ok(Setting::Text(flag.to_string())),
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
            (DeValue::Table(table), Kind::ConfigSettings) => {
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
            (DeValue::Table(table), Kind::Frontend) => self.read_frontend_table(key, table),
            (other, _) => Err(wrong_type(described(other))),
        }
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

/// Table entries in the order they appear in the file (the map itself is sorted by key).
fn in_file_order<'t, 'i>(
    table: &'t DeTable<'i>,
) -> Vec<(
    &'t Spanned<std::borrow::Cow<'i, str>>,
    &'t Spanned<DeValue<'i>>,
)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
}

fn table_start(table: &DeTable<'_>) -> usize {
    table.keys().map(|key| key.span().start).min().unwrap_or(0)
}

/// `an integer`, `a table`: a TOML value's type for messages.
fn described(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
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

fn unknown_key(name: &str, table_name: &str, level: Level, origin: Origin) -> OptionsError {
    let mut candidates: Vec<&str> = schema::all().iter().map(|o| o.key).collect();
    match level {
        Level::Top => {
            candidates.extend(cibw::data().platform_tables.iter().map(String::as_str));
            candidates.push("overrides");
        }
        Level::Override => candidates.extend(["select", "inherit"]),
        Level::Platform | Level::ForeignPlatform => {}
    }
    let table = if table_name.starts_with('[') || table_name == "inherit" {
        table_name.to_string()
    } else {
        format!("[{table_name}]")
    };
    OptionsError::UnknownKey {
        origin,
        key: name.to_string(),
        table,
        suggestion: schema::closest(name, candidates).map(String::from),
    }
}

fn push_once(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// Whether an option may appear in an override: per-build options, except those
/// cibuildwheel's schema keeps out of overrides.
fn overridable(spec: &OptionSpec) -> bool {
    spec.scope == Scope::PerBuild && cibw::find(spec.key).is_none_or(|option| option.overridable)
}
