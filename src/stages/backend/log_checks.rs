//! What a build's log says it left out although the project asked for it: a build that
//! looks for OpenMP and does not find it goes on without its parallelism, and its wheel
//! passes every check, so only the log knows (a machine-learning project's aarch64 and
//! macOS wheels were built single-threaded that way).

/// One line per feature the log shows the build asked for and went without, each naming
/// the log line that says so.
pub fn lost_features(log: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in log.lines() {
        let line = line.trim();
        let lost = LOST.iter().find(|(marker, _)| line_says(line, marker));
        if let Some((_, what)) = lost {
            let message = format!("{what} (the build log says `{line}`){OPENMP_REMEDY}");
            if !found.iter().any(|seen| seen.starts_with(what)) {
                found.push(message);
            }
        }
    }
    found
}

/// What gives a build the OpenMP runtime crosswheel did not see it ask for (its request
/// was in a file crosswheel does not read, such as a CMake module).
const OPENMP_REMEDY: &str =
    ": `target-libraries = [\"libomp\"]` gives it LLVM's OpenMP runtime for the target";

/// Markers of a lost feature, as build systems print them, and what crosswheel says.
const LOST: &[(&str, &str)] = &[
    // meson's dependency('openmp'), for any language.
    (
        "Run-time dependency OpenMP for * found: NO",
        "the build asked for OpenMP and built without it",
    ),
    (
        "OpenMP found but omp.h missing",
        "the build asked for OpenMP and built without it",
    ),
    // CMake's FindOpenMP.
    (
        "Could NOT find OpenMP",
        "the build asked for OpenMP and built without it",
    ),
];

/// Whether `line` holds `marker`, where `*` stands for one word.
fn line_says(line: &str, marker: &str) -> bool {
    match marker.split_once('*') {
        None => line.contains(marker),
        Some((before, after)) => line.match_indices(before).any(|(start, _)| {
            let rest = &line[start + before.len()..];
            rest.split_once(' ').is_some_and(|(word, tail)| {
                !word.is_empty() && format!(" {tail}").starts_with(after)
            })
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesons_missing_openmp_is_a_lost_feature_said_once() {
        let log = "Found pkg-config: YES\n\
                   WARNING: OpenMP found but omp.h missing\n\
                   Run-time dependency OpenMP for c found: NO (tried system)\n\
                   Run-time dependency OpenMP for cpp found: NO (tried system)\n";
        let lost = lost_features(log);
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(
            lost[0],
            format!(
                "the build asked for OpenMP and built without it (the build log says `WARNING: OpenMP found but omp.h missing`){OPENMP_REMEDY}"
            )
        );
    }

    #[test]
    fn cmakes_missing_openmp_is_a_lost_feature() {
        let log = "-- Could NOT find OpenMP_C (missing: OpenMP_C_FLAGS OpenMP_C_LIB_NAMES)\n";
        assert_eq!(lost_features(log).len(), 1);
    }

    #[test]
    fn openmp_found_or_never_asked_for_is_nothing() {
        let log = "Run-time dependency OpenMP for c found: YES 4.5\n\
                   Run-time dependency threads found: YES\n\
                   Run-time dependency openblas found: NO (tried pkgconfig)\n";
        assert!(lost_features(log).is_empty());
    }
}
