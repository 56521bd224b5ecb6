//! Runs one PEP 517 hook in a subprocess: a small python script imports the backend and
//! writes the hook's result to a file (backends print freely on stdout).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::BuildError;

const DRIVER: &str = r#"
import importlib, json, os, sys

with open(sys.argv[1], encoding="utf-8") as f:
    request = json.load(f)
# PEP 517: backend-path entries are relative to the source tree and come first.
for entry in reversed(request["backend_path"]):
    sys.path.insert(0, os.path.abspath(entry))
module_name, _, attribute = request["backend"].partition(":")
backend = importlib.import_module(module_name.strip())
for part in filter(None, attribute.strip().split(".")):
    backend = getattr(backend, part)
hook = request["hook"]
settings = request["config_settings"] or None
if hook == "build_wheel":
    result = backend.build_wheel(request["wheel_directory"], settings)
else:
    function = getattr(backend, hook, None)
    result = function(settings) if function else []
with open(request["result_file"], "w", encoding="utf-8") as f:
    json.dump({"result": result}, f)
"#;

pub(crate) struct HookRun<'a> {
    pub python: &'a Path,
    pub source_dir: &'a Path,
    pub scratch_dir: &'a Path,
    pub backend: &'a str,
    pub backend_path: &'a [String],
    pub config_settings: &'a BTreeMap<String, Value>,
    /// Variables to set; `remove` are dropped from the inherited environment first.
    pub env: &'a BTreeMap<String, String>,
    pub remove: &'a [&'a str],
    /// The build log: the hook's output is appended as it comes, so `tail -f` follows a
    /// long build (the whole log is rewritten, the same, when the hook ends).
    pub log_file: Option<&'a Path>,
    /// Told each complete output line as it comes (progress shows the last one).
    pub on_line: Option<super::LineSink<'a>>,
}

pub(crate) struct HookOutcome {
    pub success: bool,
    pub status: String,
    pub output: String,
    pub result: Option<Value>,
}

impl HookRun<'_> {
    pub fn run(
        &self,
        hook: &str,
        wheel_directory: Option<&Path>,
    ) -> Result<HookOutcome, BuildError> {
        let io = |path: PathBuf| {
            move |source| BuildError::Io(crate::io_error::IoError::new("write", path, source))
        };
        let driver = self.scratch_dir.join("crosswheel_pep517_driver.py");
        std::fs::write(&driver, DRIVER).map_err(io(driver.clone()))?;
        let result_file = self.scratch_dir.join(format!("{hook}.result.json"));
        let request_file = self.scratch_dir.join(format!("{hook}.request.json"));
        let _ = std::fs::remove_file(&result_file);
        let request = json!({
            "hook": hook,
            "backend": self.backend,
            "backend_path": self.backend_path,
            "config_settings": self.config_settings,
            "wheel_directory": wheel_directory.map(|dir| dir.to_string_lossy().into_owned()),
            "result_file": result_file.to_string_lossy(),
        });
        std::fs::write(&request_file, request.to_string()).map_err(io(request_file.clone()))?;

        let mut command = duct::cmd(self.python, [driver.as_os_str(), request_file.as_os_str()])
            .dir(self.source_dir)
            .stderr_to_stdout()
            .unchecked();
        for name in self.remove {
            command = command.env_remove(name);
        }
        for (name, value) in self.env {
            command = command.env(name, value);
        }
        let run_error = |source| {
            BuildError::Io(crate::io_error::IoError::new(
                "run",
                self.python.to_path_buf(),
                source,
            ))
        };
        let reader = command.reader().map_err(run_error)?;
        let captured = self.stream(&reader).map_err(run_error)?;
        let status = match reader.try_wait().map_err(run_error)? {
            Some(output) => output.status,
            None => return Err(run_error(std::io::Error::other("the hook did not exit"))),
        };
        let result = std::fs::read_to_string(&result_file)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|mut value| value.get_mut("result").map(Value::take));
        Ok(HookOutcome {
            success: status.success() && result.is_some(),
            status: status.to_string(),
            output: String::from_utf8_lossy(&captured).into_owned(),
            result,
        })
    }

    /// Reads the hook's output to its end, appending it to the log file as it comes and
    /// telling `on_line` each complete line.
    fn stream(&self, reader: &duct::ReaderHandle) -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Write};
        let mut log = match self.log_file {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            ),
            None => None,
        };
        let mut captured = Vec::new();
        let mut chunk = [0u8; 8192];
        let mut reader = reader;
        loop {
            let read = reader.read(&mut chunk)?;
            if read == 0 {
                return Ok(captured);
            }
            let line_start = captured.len();
            captured.extend_from_slice(&chunk[..read]);
            if let Some(log) = &mut log {
                log.write_all(&chunk[..read])?;
            }
            if let (Some(on_line), Some(line)) =
                (self.on_line, last_complete_line(&captured, line_start))
            {
                (on_line.0)(&line);
            }
        }
    }
}

/// The last complete line of `output` that ends after `from` (where the new bytes began).
fn last_complete_line(output: &[u8], from: usize) -> Option<String> {
    let end = output.iter().rposition(|&byte| byte == b'\n')?;
    if end < from {
        return None;
    }
    let start = output[..end]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |at| at + 1);
    let line = String::from_utf8_lossy(&output[start..end])
        .trim()
        .to_string();
    (!line.is_empty()).then_some(line)
}

/// Whether a log line is a compiler's, linker's or tool's error diagnostic (CMake's
/// `CMake Error at CMakeLists.txt:3 (project):` too, whose message follows it).
fn is_diagnostic(line: &str) -> bool {
    // configure's probes print their result after `checking ...`, with whatever the
    // compiler said when a probe failed (libtool's `-single_module` check): configure goes
    // on, and its own failures say `configure: error:`.
    // Nor is automake's test-suite summary (`# ERROR: 0`) a diagnostic.
    let line = line.trim_start();
    if (line.starts_with("checking ") && !line.contains("configure: error:"))
        || line.starts_with("# ERROR:")
    {
        return false;
    }
    let lower = line.to_ascii_lowercase();
    lower.contains("error:")
        || lower.contains("fatal error")
        || lower.contains("undefined reference")
        // GNU ld: `ld: cannot find -lfoo: No such file or directory`.
        || lower.contains(": cannot find -l")
        || is_cmake_error(line)
}

fn is_cmake_error(line: &str) -> bool {
    line.trim_start().starts_with("CMake Error")
}

/// The first error a compiler, linker or tool reported in a build log.
pub(crate) fn first_diagnostic(output: &str) -> Option<&str> {
    output
        .lines()
        .map(str::trim)
        .find(|line| is_diagnostic(line))
}

/// The lines of a failed build a user needs: compiler diagnostics with the source line
/// and caret that follow them (CMake's errors with their message), else the end of the log.
pub(crate) fn error_excerpt(output: &str) -> String {
    const MAX_LINES: usize = 40;
    let lines: Vec<&str> = output.lines().collect();
    let mut keep = vec![false; lines.len()];
    for (index, line) in lines.iter().enumerate() {
        if is_diagnostic(line) {
            let kept = if is_cmake_error(line) { 12 } else { 4 };
            for flag in keep.iter_mut().skip(index).take(kept) {
                *flag = true;
            }
        }
    }
    let picked: Vec<&str> = lines
        .iter()
        .zip(&keep)
        .filter(|(_, keep)| **keep)
        .map(|(line, _)| *line)
        .take(MAX_LINES)
        .collect();
    if picked.is_empty() {
        let start = lines.len().saturating_sub(30);
        lines.get(start..).unwrap_or_default().join("\n")
    } else {
        picked.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_keeps_compiler_diagnostic_with_caret() {
        let log = "running build_ext\nbuilding 'x' extension\nsrc/x.c:3:5: error: use of undeclared identifier 'y'\n    3 | y;\n      | ^\n1 error generated.\nerror: command 'cc' failed\n";
        let excerpt = error_excerpt(log);
        assert!(
            excerpt.starts_with(
                "src/x.c:3:5: error: use of undeclared identifier 'y'\n    3 | y;\n      | ^"
            ),
            "{excerpt}"
        );
        assert!(!excerpt.contains("running build_ext"));
    }

    #[test]
    fn a_configure_probes_result_is_no_diagnostic() {
        let log = [
            "checking for -single_module linker flag... error: unsupported linker arg: -single_module",
            "checking for ar... ar",
            "checking whether we are cross compiling... configure: error: in '/b':",
            "FAIL: verify1",
            "# ERROR: 0",
            "subprocess.CalledProcessError: Command '['make', 'check']' returned non-zero exit status 2.",
        ]
        .join("\n");
        let log = log.as_str();
        assert_eq!(
            first_diagnostic(log),
            Some("checking whether we are cross compiling... configure: error: in '/b':"),
            "configure stopping in a probe is a diagnostic"
        );
        assert!(!error_excerpt(log).contains("single_module"));
    }

    #[test]
    fn first_diagnostic_is_the_first_error_line() {
        let log = "building 'x' extension\nwarning: unused\nld.lld: error: relocation R_PPC64_REL16_HA cannot be used\nerror: command failed\n";
        assert_eq!(
            first_diagnostic(log),
            Some("ld.lld: error: relocation R_PPC64_REL16_HA cannot be used")
        );
        assert_eq!(first_diagnostic("all fine\n"), None);
    }

    #[test]
    fn excerpt_keeps_a_cmake_error_with_its_message() {
        let log = "-- Detecting C compile features - done\nCMake Error at CMakeLists.txt:5 (find_package):\n  By not providing \"Findlibuv.cmake\" in CMAKE_MODULE_PATH this project has\n  asked CMake to find a package configuration file provided by \"libuv\", but\n  CMake did not find one.\n\n  Could not find a package configuration file provided by \"libuv\" with any\n  of the following names:\n\n-- Configuring incomplete, errors occurred!\n";
        let excerpt = error_excerpt(log);
        assert!(
            excerpt.starts_with("CMake Error at CMakeLists.txt:5 (find_package):")
                && excerpt.contains("provided by \"libuv\" with any"),
            "{excerpt}"
        );
        assert!(!excerpt.contains("Detecting"), "{excerpt}");
    }

    #[test]
    fn excerpt_without_diagnostics_is_the_log_tail() {
        let log: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let excerpt = error_excerpt(&log);
        assert!(
            excerpt.starts_with("line 70") && excerpt.ends_with("line 99"),
            "{excerpt}"
        );
    }
}
