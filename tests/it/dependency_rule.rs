//! The dependency rule of docs/architecture.md, held by the code rather than by prose: the
//! modules of `src/` form layers, and a module names (`crate::x`, in a `use` or a path)
//! only modules of lower layers. Inside a layer, formats know nothing of each other, and a
//! stage names only the type its predecessor hands it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::sources;

/// Lowest first; the second field says whether modules of the layer may name each other.
const LAYERS: &[(&str, Within, &[&str])] = &[
    (
        "foundation: the platform model, the Python tag, errors, logging, the flags",
        Within::Never,
        &[
            "target",
            "python_tag",
            "package_name",
            "io_error",
            "logging",
            "cli",
        ],
    ),
    (
        "formats: they know nothing of stages or of each other",
        Within::Never,
        &["elf", "macho", "wheel", "sbom"],
    ),
    (
        "support: the machine, Debian trees, target libraries, the options",
        Within::Always,
        &["host", "sysroot", "target_libraries", "options"],
    ),
    (
        "policy and analysis: facts read from wheels and binaries",
        Within::Always,
        &[
            "manylinux",
            "analysis",
            "inspect",
            "loadcheck",
            "provenance",
        ],
    ),
    (
        "stages",
        Within::Only(&[
            ("crossenv", "toolchain"),
            ("backend", "crossenv"),
            ("backend", "toolchain"),
        ]),
        &[
            "toolchain",
            "crossenv",
            "backend",
            "repair",
            "testing",
            "publish",
        ],
    ),
    (
        "coordination: the only callers of stages in order",
        Within::Always,
        &["pipeline", "commands"],
    ),
];

#[derive(Clone, Copy)]
enum Within {
    Never,
    Always,
    /// (from, to): a stage naming its predecessor's output type.
    Only(&'static [(&'static str, &'static str)]),
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, _, modules)| modules.contains(&module))
}

/// The crate modules a source names: `crate::x` outside comments.
fn named_modules(source: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or_default();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                named.insert(name);
            }
        }
    }
    named
}

/// `src/options/mod.rs` → `options`; `src/target.rs` → `target`; `src/main.rs` → `main`.
fn module_of(relative: &Path) -> String {
    let first = relative.components().nth(1).unwrap();
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

#[test]
fn a_lower_layer_never_names_a_higher_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(root).unwrap();
        let module = module_of(relative);
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(layer) = layer_of(&module) else {
            problems.push(format!(
                "{}: module `{module}` is in no layer: add it to LAYERS here and to the table of docs/architecture.md",
                relative.display()
            ));
            continue;
        };
        let source = std::fs::read_to_string(path).unwrap();
        for named in named_modules(&source) {
            if named == module {
                continue;
            }
            let Some(named_layer) = layer_of(&named) else {
                continue;
            };
            let allowed = match named_layer.cmp(&layer) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Greater => false,
                std::cmp::Ordering::Equal => match LAYERS[layer].1 {
                    Within::Never => false,
                    Within::Always => true,
                    Within::Only(pairs) => pairs.contains(&(module.as_str(), named.as_str())),
                },
            };
            if !allowed {
                problems.push(format!(
                    "{}: `{module}` ({}) names `crate::{named}` ({})",
                    relative.display(),
                    LAYERS[layer].0,
                    LAYERS[named_layer].0
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the dependency rule of docs/architecture.md is broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn main_only_parses_and_dispatches() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    let mut named = BTreeSet::new();
    for (at, _) in source.match_indices("crosswheel::") {
        let rest = &source[at + "crosswheel::".len()..];
        named.insert(
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>(),
        );
    }
    let expected: BTreeSet<String> = ["cli", "commands", "logging"].map(String::from).into();
    assert_eq!(
        named, expected,
        "main.rs parses and dispatches, nothing else"
    );
}

#[test]
fn every_module_of_the_crate_is_in_a_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let modules: Vec<&str> = lib
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';'))
        .collect();
    assert!(modules.len() > 10, "{modules:?}");
    let missing: Vec<&&str> = modules
        .iter()
        .filter(|module| layer_of(module).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "modules in no layer of tests/dependency_rule.rs: {missing:?}"
    );
}

/// The module names in backticks of one table cell (`elf::edit` names `elf`).
fn cell_modules(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|quoted| quoted.split("::").next().unwrap_or_default().to_string())
        .filter(|name| layer_of(name).is_some())
        .collect()
}

/// docs/architecture.md's table of which module uses which says what the code does.
#[test]
fn the_architecture_table_lists_what_each_module_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let mut actual: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for path in &files {
        let module = module_of(path.strip_prefix(root).unwrap());
        let source = std::fs::read_to_string(path).unwrap();
        let named = actual.entry(module.clone()).or_default();
        named.extend(
            named_modules(&source)
                .into_iter()
                .filter(|name| *name != module && layer_of(name).is_some()),
        );
    }
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut documented = BTreeSet::new();
    let mut problems = Vec::new();
    for line in doc.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, modules, uses, ..] = cells[..] else {
            continue;
        };
        for module in cell_modules(modules) {
            let said = cell_modules(uses);
            let does = actual.get(&module).cloned().unwrap_or_default();
            if said != does {
                problems.push(format!(
                    "`{module}`: the table says {said:?}, the code names {does:?}"
                ));
            }
            documented.insert(module);
        }
    }
    let missing: Vec<&String> = actual
        .keys()
        .filter(|module| layer_of(module).is_some() && !documented.contains(*module))
        .collect();
    assert!(
        problems.is_empty() && missing.is_empty(),
        "docs/architecture.md's dependency table is out of date:\n{}\nmodules without a row: {missing:?}",
        problems.join("\n")
    );
}
