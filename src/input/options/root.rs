//! Which folder is `{project}` for `crosswheel build FOLDER`.
//!
//! cibuildwheel runs in the project root and is given the package folder
//! (`cibuildwheel src/spam`): the working directory is `{project}`, and `test-sources` and
//! `output-dir` are relative to it. crosswheel's own examples are built from elsewhere
//! (`crosswheel build examples/blasdot` in this repository) with a `[tool.crosswheel]`
//! table whose paths mean the folder that holds it. Both hold with one rule: a package
//! folder configured by crosswheel's own table alone is its own root; one configured by
//! `[tool.cibuildwheel]` (a `[tool.crosswheel]` table beside it or not), or by nothing,
//! has cibuildwheel's root.

use std::path::{Path, PathBuf};

/// The project root for the package folder `package` built from `working_dir`; `None`:
/// the folder is its own root. The working directory is the root when the folder lies
/// inside it and the folder's pyproject.toml has `[tool.cibuildwheel]` or no
/// `[tool.crosswheel]` table. A folder outside the working directory (which cibuildwheel
/// refuses) is its own root.
pub fn project_root_for(package: &Path, working_dir: &Path) -> Option<PathBuf> {
    let tables = tool_tables(&package.join("pyproject.toml"));
    if tables.crosswheel && !tables.cibuildwheel {
        return None;
    }
    let cwd = working_dir.canonicalize().ok()?;
    let package = package.canonicalize().ok()?;
    package.starts_with(&cwd).then_some(cwd)
}

struct ToolTables {
    crosswheel: bool,
    cibuildwheel: bool,
}

/// An unreadable or invalid file counts as having none: `options::resolve` reads it
/// again and reports what is wrong with it.
fn tool_tables(pyproject: &Path) -> ToolTables {
    let document = std::fs::read_to_string(pyproject)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok());
    let has = |name: &str| {
        document
            .as_ref()
            .and_then(|document| document.get("tool"))
            .and_then(|tool| tool.get(name))
            .is_some_and(toml::Value::is_table)
    };
    ToolTables {
        crosswheel: has("crosswheel"),
        cibuildwheel: has("cibuildwheel"),
    }
}
