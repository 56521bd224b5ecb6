//! The dependency rule of docs/architecture.md, held by the code rather than by prose: the
//! modules of `src/` form layers, and a module names (`crate::x`, in a `use` or a path)
//! only modules of lower layers. Inside a layer, formats know nothing of each other, and a
//! stage names only the type its predecessor hands it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::sources;

/// Lowest first: the folder of `src/` that holds the layer (none: the crate root), what
/// it is, whether its modules may name each other, and its modules.
const LAYERS: &[(Option<&str>, &str, Within, &[&str])] = &[
    (
        None,
        "foundation: the platform model, the Python tag, errors, logging, the flags",
        // A target's CPython names (EXT_SUFFIX, SOABI, MULTIARCH) are filled for one CPython.
        Within::Only(&[("target", "python_tag")]),
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
        Some("formats"),
        "formats: they know nothing of stages or of each other",
        Within::Never,
        &["elf", "macho", "wheel", "sbom"],
    ),
    (
        Some("support"),
        "support: the machine, the network policy, Debian trees, target libraries",
        Within::Always,
        &["host", "sysroot", "build_tools", "target_libraries"],
    ),
    (
        Some("input"),
        "input: the options, read once and handed on typed",
        Within::Always,
        &["options"],
    ),
    (
        Some("analysis"),
        "analysis: facts read from wheels and binaries, and the policies that judge them",
        Within::Always,
        &["manylinux", "facts", "inspect", "loadcheck", "provenance"],
    ),
    (
        Some("stages"),
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
        Some("coordination"),
        "coordination: the only callers of stages in order",
        Within::Always,
        &["pipeline", "commands"],
    ),
];

#[derive(Clone, Copy)]
enum Within {
    Never,
    Always,
    /// (from, to): a stage naming its predecessor's output type; the platform model naming
    /// the Python tag.
    Only(&'static [(&'static str, &'static str)]),
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, _, _, modules)| modules.contains(&module))
}

fn is_layer_folder(name: &str) -> bool {
    LAYERS.iter().any(|(folder, ..)| *folder == Some(name))
}

/// The identifier at the start of `text`.
fn identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The crate modules a source names outside comments: `crate::target` names `target`,
/// `crate::formats::elf` names `elf` (a layer folder is only the way to it).
fn named_modules(source: &str) -> BTreeSet<String> {
    modules_after(source, "crate::")
}

/// The crate modules named by paths that start with `root` (`crate::`, `crosswheel::`).
fn modules_after(source: &str, root: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or_default();
        for (at, _) in code.match_indices(root) {
            let rest = &code[at + root.len()..];
            let mut name = identifier(rest);
            if is_layer_folder(name) {
                name = rest[name.len()..]
                    .strip_prefix("::")
                    .map(identifier)
                    .unwrap_or_default();
            }
            if !name.is_empty() {
                named.insert(name.to_string());
            }
        }
    }
    named
}

/// `src/input/options/mod.rs` → `options`; `src/target.rs` → `target`;
/// `src/main.rs` → `main`; a layer's own `src/formats/mod.rs` → `formats`.
fn module_of(relative: &Path) -> String {
    let parts: Vec<String> = relative
        .components()
        .skip(1)
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    match &parts[..] {
        [layer, file] if is_layer_folder(layer) && file == "mod.rs" => layer.clone(),
        [layer, module, ..] if is_layer_folder(layer) => module.trim_end_matches(".rs").into(),
        [first, ..] => first.trim_end_matches(".rs").into(),
        [] => unreachable!("a file below src/"),
    }
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
        if module == "lib" || module == "main" || is_layer_folder(&module) {
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
                std::cmp::Ordering::Equal => match LAYERS[layer].2 {
                    Within::Never => false,
                    Within::Always => true,
                    Within::Only(pairs) => pairs.contains(&(module.as_str(), named.as_str())),
                },
            };
            if !allowed {
                problems.push(format!(
                    "{}: `{module}` ({}) names `crate::{named}` ({})",
                    relative.display(),
                    LAYERS[layer].1,
                    LAYERS[named_layer].1
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
    let named = modules_after(&source, "crosswheel::");
    let expected: BTreeSet<String> = ["cli", "commands", "logging"].map(String::from).into();
    assert_eq!(
        named, expected,
        "main.rs parses and dispatches, nothing else"
    );
}

/// The `pub mod` lines of a Rust source.
fn declared_modules(source: &str) -> BTreeSet<String> {
    source
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';').to_string())
        .collect()
}

/// The folders show the layers: the crate root declares the foundation and one module per
/// layer folder, and each folder declares exactly the modules of its layer, so a module
/// cannot sit in one layer's folder while the rule counts it in another.
#[test]
fn every_module_sits_in_the_folder_of_its_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let mut expected_root: BTreeSet<String> = LAYERS[0].3.iter().map(|m| m.to_string()).collect();
    for (folder, _, _, modules) in &LAYERS[1..] {
        let folder = folder.expect("only the foundation lives at the crate root");
        expected_root.insert(folder.to_string());
        let mod_rs = root.join("src").join(folder).join("mod.rs");
        let declared = declared_modules(&std::fs::read_to_string(&mod_rs).unwrap());
        let expected: BTreeSet<String> = modules.iter().map(|m| m.to_string()).collect();
        assert_eq!(
            declared,
            expected,
            "{} declares other modules than its layer in LAYERS",
            mod_rs.display()
        );
        for module in *modules {
            assert!(
                root.join("src").join(folder).join(module).is_dir()
                    || root
                        .join("src")
                        .join(folder)
                        .join(format!("{module}.rs"))
                        .is_file(),
                "`{module}` is not in src/{folder}/"
            );
        }
    }
    assert_eq!(
        declared_modules(&lib),
        expected_root,
        "src/lib.rs declares other modules than the foundation and the layer folders"
    );
}

#[test]
fn the_rule_reads_a_layer_folder_as_the_way_to_a_module() {
    let named = named_modules(
        "use crate::formats::elf::Elf;\nuse crate::target::Target; // crate::stages::repair\n",
    );
    assert_eq!(named, ["elf", "target"].map(String::from).into());
    assert_eq!(module_of(Path::new("src/input/options/mod.rs")), "options");
    assert_eq!(
        module_of(Path::new("src/stages/repair/linux/graft.rs")),
        "repair"
    );
    assert_eq!(module_of(Path::new("src/target.rs")), "target");
    assert_eq!(module_of(Path::new("src/formats/mod.rs")), "formats");
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
        if is_layer_folder(&module) {
            continue;
        }
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

/// docs/architecture.md's layout block ("Layout: the folders are the layers") names each
/// layer's folder and modules as `LAYERS` holds them, which
/// `every_module_sits_in_the_folder_of_its_layer` holds to the code: the picture a reader
/// gets first cannot drift from the folders.
#[test]
fn the_architecture_layout_lists_each_layers_folder_and_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let block = doc
        .split("## Layout: the folders are the layers")
        .nth(1)
        .and_then(|rest| rest.split("```").nth(1))
        .expect("docs/architecture.md has a layout block");
    // A row: the folder (or the foundation's files), modules two spaces apart, then the
    // layer's name after a wider gap.
    let mut said: Vec<(Option<String>, BTreeSet<String>)> = Vec::new();
    for line in block.lines().map(str::trim) {
        let (folder, rest) = match line.split_once(char::is_whitespace) {
            Some((first, rest)) if first.ends_with('/') && first != "src/" => {
                (Some(first.trim_end_matches('/').to_string()), rest)
            }
            _ if line.ends_with("foundation") => (None, line),
            _ => continue,
        };
        let modules = rest.trim().split("   ").next().unwrap_or_default();
        said.push((
            folder,
            modules
                .split_whitespace()
                .map(|name| name.trim_end_matches(".rs").to_string())
                .collect(),
        ));
    }
    let held: Vec<(Option<String>, BTreeSet<String>)> = LAYERS
        .iter()
        .map(|(folder, _, _, modules)| {
            (
                folder.map(str::to_string),
                modules.iter().map(|module| module.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        said, held,
        "docs/architecture.md's layout block says other than the layers the code holds (LAYERS here)"
    );
}

/// docs/architecture.md's stage table names folders that exist and entry functions they
/// define, and every stage folder of `src/stages` has a row: a renamed entry or
/// a new stage cannot leave the table behind.
#[test]
fn the_stage_table_names_each_stage_folder_and_its_entry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let table = doc
        .split("| stage | entry | takes | hands on |")
        .nth(1)
        .expect("docs/architecture.md has the stage table");
    let mut problems = Vec::new();
    let mut folders = BTreeSet::new();
    for row in table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
    {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (stage, entry) = (cells[1], cells[2]);
        let Some(folder) = stage
            .split('`')
            .find(|part| part.starts_with("src/") && part.ends_with('/'))
        else {
            problems.push(format!("{stage}: no `src/.../` folder"));
            continue;
        };
        folders.insert(folder.trim_end_matches('/').to_string());
        let mut sources = Vec::new();
        crate::common::sources(&root.join(folder), &mut sources);
        let text: String = sources
            .iter()
            .map(|path| std::fs::read_to_string(path).unwrap())
            .collect();
        // `module::function(` or `Type::function(`: the function's name before `(`.
        for name in entry.split('`').skip(1).step_by(2).filter_map(|code| {
            let call = code.split('(').next()?;
            call.contains("::")
                .then(|| call.rsplit("::").next().unwrap_or_default())
        }) {
            if !text.contains(&format!("fn {name}(")) && !text.contains(&format!("fn {name}<")) {
                problems.push(format!("{folder}: no `fn {name}` for the entry {entry}"));
            }
        }
    }
    for entry in std::fs::read_dir(root.join("src/stages")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let folder = format!("src/stages/{}", path.file_name().unwrap().to_string_lossy());
            if !folders.contains(&folder) {
                problems.push(format!("{folder} has no row in the stage table"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md's stage table is out of date:\n{}",
        problems.join("\n")
    );
}
