//! Reads `[tool.crosswheel]` (with its platform tables and overrides) from a TOML file,
//! keeping the line of every value so that errors can point at it.

mod values;

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
use super::value::{Inherit, Located};

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
    /// The top table's `inherit` rules: how its values combine with the defaults.
    pub global_inherit: BTreeMap<&'static str, Inherit>,
    pub platforms: BTreeMap<Platform, Layer>,
    /// Each platform table's `inherit` rules: how its values combine with the top table's.
    pub platform_inherit: BTreeMap<Platform, BTreeMap<&'static str, Inherit>>,
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

/// What an override entry says besides its options.
#[derive(Default)]
struct OverrideKeys {
    /// `select` is present, even if it did not read: a missing one is its own problem.
    select_seen: bool,
    select: Option<Selector>,
    inherit: Option<BTreeMap<&'static str, Inherit>>,
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
        let mut keys = OverrideKeys::default();
        for (key, value) in in_file_order(table) {
            let name: &str = key.get_ref();
            if level == Level::Top && self.read_top_platform_table(key, value, table_name, document)
            {
                continue;
            }
            let origin = || self.origin(key.span().start);
            match (level, name) {
                (Level::Top, "overrides") => self.read_overrides(value, table_name, document),
                (Level::Override, "select") => {
                    keys.select_seen = true;
                    keys.select = self.keep(self.read_select(value, origin()));
                }
                // Every level may say how its values combine with the ones below it, as
                // cibuildwheel 4.3 reads it; a foreign platform's rules are not read.
                (Level::ForeignPlatform, "inherit") => {}
                (_, "inherit") => {
                    keys.inherit = self.keep(self.read_inherit(value, origin()));
                }
                _ => self.read_option(
                    key,
                    value,
                    table_name,
                    level,
                    &mut layer,
                    &mut document.ignored,
                ),
            }
        }
        match level {
            Level::Override => self.push_override(table, table_name, keys, layer, document),
            Level::Top | Level::Platform => {
                document.global = layer;
                document.global_inherit = keys.inherit.unwrap_or_default();
            }
            Level::ForeignPlatform => {}
        }
    }

    /// An option of the table, into `layer` if it may stand in this table and its value
    /// reads (each problem is recorded); into `ignored` if it does not apply to cross builds.
    fn read_option(
        &self,
        key: &Spanned<std::borrow::Cow<'_, str>>,
        value: &Spanned<DeValue<'_>>,
        table_name: &str,
        level: Level,
        layer: &mut Layer,
        ignored: &mut Vec<String>,
    ) {
        let name: &str = key.get_ref();
        let origin = self.origin(key.span().start);
        let Some(spec) = schema::find(name) else {
            self.keep::<()>(Err(unknown_key(name, table_name, level, origin)));
            return;
        };
        if level == Level::ForeignPlatform {
            return;
        }
        if level == Level::Override && !overridable(spec) {
            self.keep::<()>(Err(OptionsError::NotOverridable {
                origin,
                key: name.to_string(),
                table: table_name.to_string(),
            }));
            return;
        }
        if spec.kind == Kind::Ignored {
            push_once(ignored, name.to_string());
        }
        let Some(setting) = self.keep(self.read_value(spec, value)) else {
            return;
        };
        let canonical = schema::canonical_key(spec.key);
        if layer.contains_key(canonical) {
            self.keep::<()>(Err(OptionsError::ArchsAndTargets { origin }));
            return;
        }
        layer.insert(canonical, Located { setting, origin });
    }

    /// An override entry's options, which apply to the builds its `select` matches; an
    /// entry without `select` is a problem.
    fn push_override(
        &self,
        table: &DeTable<'_>,
        table_name: &str,
        keys: OverrideKeys,
        layer: Layer,
        document: &mut ConfigDocument,
    ) {
        if !keys.select_seen {
            self.keep::<()>(Err(OptionsError::InvalidValue {
                origin: self.origin(table_start(table)),
                key: "select".to_string(),
                message: format!(
                    "every {table_name} entry needs `select`, e.g. select = \"cp311-*\""
                ),
            }));
        }
        if let Some(select) = keys.select {
            document.overrides.push(Override {
                select,
                values: layer,
                inherit: keys.inherit.unwrap_or_default(),
            });
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
            if let Some((platform_layer, inherit)) = self.keep(read) {
                document.platforms.insert(platform, platform_layer);
                document.platform_inherit.insert(platform, inherit);
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
    ) -> Result<(Layer, BTreeMap<&'static str, Inherit>), OptionsError> {
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
        Ok((platform_document.global, platform_document.global_inherit))
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
        let entries: Vec<(String, Option<String>, Origin)> = match value.get_ref() {
            DeValue::Table(table) => in_file_order(table)
                .into_iter()
                .map(|(key, rule)| {
                    (
                        key.get_ref().to_string(),
                        rule.get_ref().as_str().map(str::to_string),
                        self.origin(key.span().start),
                    )
                })
                .collect(),
            // cibuildwheel's string form, `"before-all; test-command=prepend"`.
            DeValue::String(text) => inherit_rules(text)
                .into_iter()
                .map(|(name, rule)| (name, Some(rule), origin.clone()))
                .collect(),
            other => {
                return Err(OptionsError::WrongType {
                    origin,
                    key: "inherit".to_string(),
                    expected: "a table such as { test-command = \"append\" }",
                    found: described(other),
                });
            }
        };
        let mut rules = BTreeMap::new();
        for (name, rule, origin) in entries {
            let name = name.as_str();
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
            let parsed = rule.as_deref().and_then(Inherit::parse).ok_or_else(|| {
                OptionsError::InvalidValue {
                    origin,
                    key: format!("inherit.{name}"),
                    message: "use \"none\", \"append\" or \"prepend\"".to_string(),
                }
            })?;
            rules.insert(schema::canonical_key(spec.key), parsed);
        }
        Ok(rules)
    }
}

/// `inherit`'s string form, as cibuildwheel reads it (and `CIBW_INHERIT`): rules
/// separated by `;`, each `option` (append) or `option=rule` (`option: rule` too).
pub(crate) fn inherit_rules(text: &str) -> Vec<(String, String)> {
    text.split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| match part.split_once(['=', ':']) {
            Some((name, rule)) => (name.trim().to_string(), rule.trim().to_string()),
            None => (part.to_string(), "append".to_string()),
        })
        .collect()
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

fn unknown_key(name: &str, table_name: &str, level: Level, origin: Origin) -> OptionsError {
    let mut candidates: Vec<&str> = schema::all().iter().map(|o| o.key).collect();
    match level {
        Level::Top => {
            candidates.extend(cibw::data().platform_tables.iter().map(String::as_str));
            candidates.extend(["overrides", "inherit"]);
        }
        Level::Override => candidates.extend(["select", "inherit"]),
        Level::Platform => candidates.push("inherit"),
        Level::ForeignPlatform => {}
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
