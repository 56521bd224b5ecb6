//! The CPU options of GCC and clang in the zig wrappers: `-march=armv8.2-a+fp16`,
//! `-mcpu=power9`, `-mtune=...`, `native` values. zig reads all three options as the
//! target CPU in its own syntax, so each is translated with `[cpu_flags.<arch>]` of
//! config/targets.toml (which also states the rules) or dropped with a notice.
//!
//! A value whose architecture or CPU the table names is one the wrappers answer for: if
//! zig still refuses it, the compile leaves a `cpu-flags.error` note and the build stage
//! fails, instead of a build system taking the refusal for a CPU the compiler lacks and
//! quietly building without its SIMD code.

use std::collections::BTreeMap;

use crate::support::host::shell_quote;
use crate::target::{CpuFlags, Target};

/// The note a compile leaves when zig refused a CPU option the wrapper translated.
pub const CPU_FLAGS_ERROR: &str = "cpu-flags.error";

/// `zig_name NAME` sets `cw_name` to NAME with `-` and `.` as `_` (zig's CPU and feature
/// names; a `-` would read to zig as "without feature"). `zig_cpu ARG` sets `cw_arg` to
/// the `-mcpu=` that means the `-march=`/`-mcpu=` ARG, and `cw_known=1` when the table
/// named its architecture or CPU. Pure shell: no process per argument.
const FUNCTIONS: &str = r#"zig_name() {
  cw_name=; cw_rest=$1
  while :; do
    case $cw_rest in
      *[-.]*) cw_name=$cw_name${cw_rest%%[-.]*}_; cw_rest=${cw_rest#*[-.]} ;;
      *) cw_name=$cw_name$cw_rest; return ;;
    esac
  done
}
zig_cpu() {
  cw_value=${1#*=}; cw_base=${cw_value%%+*}; cw_features=${cw_value#"$cw_base"}
  case $1 in
    -march=*) case $cw_base in
@MARCH@      *) zig_name "$cw_base"; cw_base=$cw_name ;;
    esac ;;
    *) case $cw_base in
@CPUS@      *) zig_name "$cw_base"; cw_base=$cw_name ;;
    esac ;;
  esac
  cw_arg=-mcpu=$cw_base
  cw_ifs=$IFS; IFS=+
  for cw_feature in $cw_features; do
    [ -n "$cw_feature" ] || continue
    cw_sign=+
    case $cw_feature in no*) cw_sign=-; cw_feature=${cw_feature#no} ;; esac
@REFUSED@    case $cw_feature in
@FEATURES@      *) zig_name "$cw_feature"; cw_feature=$cw_name ;;
    esac
    cw_arg=$cw_arg$cw_sign$cw_feature
  done
  IFS=$cw_ifs
}
cw_known=; cw_cpu_flags=
"#;

fn table_of(target: &Target) -> &'static CpuFlags {
    static EMPTY: std::sync::OnceLock<CpuFlags> = std::sync::OnceLock::new();
    crate::target::config()
        .cpu_flags
        .get(target.zig_arch())
        .unwrap_or_else(|| EMPTY.get_or_init(CpuFlags::default))
}

fn case_lines(table: &BTreeMap<String, String>, var: &str, known: bool) -> String {
    let mark = if known { "; cw_known=1" } else { "" };
    table
        .iter()
        .map(|(from, to)| {
            format!(
                "      {}) {var}={}{mark} ;;\n",
                shell_quote(from),
                shell_quote(to)
            )
        })
        .collect()
}

/// On macOS targets, a `case` refusing the features no Apple CPU has: the compile fails,
/// as a build's probe for them must.
fn refused_on_apple(target: &Target, table: &CpuFlags) -> String {
    if !target.is_macos() || table.not_on_apple.is_empty() {
        return String::new();
    }
    let patterns: Vec<String> = table
        .not_on_apple
        .iter()
        .map(|feature| shell_quote(feature).into_owned())
        .collect();
    let message = format!(
        "error: {}: %s: no Apple CPU has %s (crosswheel's compiler wrapper refuses it for macOS)\\n",
        target.id()
    );
    format!(
        "    case $cw_sign$cw_feature in +{}) printf {} \"$1\" \"$cw_feature\" >&2; exit 1 ;; esac\n",
        patterns.join("|+"),
        shell_quote(&message)
    )
}

/// The shell functions the argument loop calls.
pub(super) fn functions(target: &Target) -> String {
    let table = table_of(target);
    FUNCTIONS
        .replace("@REFUSED@", &refused_on_apple(target, table))
        .replace("@MARCH@", &case_lines(&table.march, "cw_base", true))
        .replace("@CPUS@", &case_lines(&table.cpus, "cw_base", true))
        .replace(
            "@FEATURES@",
            &case_lines(&table.features, "cw_feature", false),
        )
}

/// `printf FORMAT ARGS > "$notes/FILE"` when the build keeps notes.
fn note(format: &str, args: &str, file: &str) -> String {
    format!(
        "[ -z \"$notes\" ] || printf {} {args} > \"$notes/{file}\"",
        shell_quote(&format!("{format}\\n"))
    )
}

/// `case` arms of the argument loop: drop what names no target CPU, translate the rest.
pub(super) fn case_arms(target: &Target) -> String {
    let native = note(
        &format!(
            "{}: %s dropped: it names the build machine's CPU, not the target's",
            target.id()
        ),
        "\"$arg\"",
        "cpu-native.notice",
    );
    let tune = note(
        &format!(
            "{}: %s dropped: zig would build for that CPU instead of only tuning for it",
            target.id()
        ),
        "\"$arg\"",
        "mtune.notice",
    );
    format!(
        "    -march=native|-mcpu=native|-mtune=native) {native}; continue ;;\n    \
         -mtune=*) {tune}; continue ;;\n    \
         -march=*|-mcpu=*) zig_cpu \"$arg\"; cw_cpu_flags=\"$cw_cpu_flags $arg -> $cw_arg\"; arg=$cw_arg ;;\n"
    )
}

/// The end of the wrapper: `command` (zig and its fixed arguments) with the rewritten
/// arguments. When a CPU option the table knows was translated, zig's refusal of it is
/// recorded for the build stage; otherwise the wrapper `exec`s zig.
pub(super) fn run(target: &Target, command: &str) -> String {
    let error = note(
        &format!(
            "{}: zig refused the CPU options crosswheel's compiler wrapper translated (%s: %s), so the build's CPU feature probes cannot be trusted: please report this to crosswheel",
            target.id()
        ),
        "\"${cw_cpu_flags# }\" \"$cw_refusal\"",
        CPU_FLAGS_ERROR,
    );
    format!(
        "if [ -z \"$cw_known\" ]; then exec {command} \"$@\"; fi\n\
         cw_errors=$(mktemp) || exit 1\n\
         {command} \"$@\" 2> \"$cw_errors\"\ncw_status=$?\ncat \"$cw_errors\" >&2\n\
         if [ \"$cw_status\" != 0 ] && grep -q 'unknown CPU' \"$cw_errors\"; then\n  \
         cw_refusal=$(grep -m1 'unknown CPU' \"$cw_errors\")\n  {error}\nfi\n\
         rm -f \"$cw_errors\"\nexit $cw_status\n"
    )
}

/// The lines of the error notes the wrappers left in `dir`: compiles that failed because
/// of the wrappers, whatever the build system made of the failure.
pub fn wrapper_errors(dir: &std::path::Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(dir.join(CPU_FLAGS_ERROR)) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}
